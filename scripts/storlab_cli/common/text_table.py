"""Aligned plain-text tables: a header row (units in the names) and rows of
already formatted cells. align: one letter a column, "l" flush left (names,
text) or "r" flush right (numbers); default: the first "l", the rest "r"."""


def lines(headers, rows, align=None, gap="  "):
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return gap.join(str(cell).ljust(w) if a == "l" else str(cell).rjust(w)
                        for cell, w, a in zip(cells, widths, align)).rstrip()

    return [line(headers), *(line(row) for row in rows)]
