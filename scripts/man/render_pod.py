#!/usr/bin/python3
"""render_pod.py CATALOG.json IN.pod OUT.pod — a man page's facts of the C
library filled in from the catalog storlab-catalog wrote at build time, so a
page never lists them by hand:

    =for storlab-presets KIND     the kind's presets: name, summary, source,
                                  which figures are fitted
"""
import json
import re
import sys

DIRECTIVE = re.compile(r"^=for storlab-presets (\S+)\s*$")


def pod_text(text):
    """Plain text safe in a POD paragraph (E<lt> / E<gt> for angle brackets)."""
    return re.sub(r"[<>]", lambda m: {"<": "E<lt>", ">": "E<gt>"}[m.group(0)], text)


def preset_list(catalog, kind):
    presets = [p for p in catalog["presets"] if p["kind"] == kind]
    if not presets:
        raise SystemExit(f"render_pod.py: the catalog has no presets of kind {kind!r}")
    lines = ["=over 4", ""]
    for preset in presets:
        lines += [f"=item C<{preset['name']}>", "", pod_text(preset["summary"]) + ".", ""]
        if preset["source"]:
            lines += [f"Source: {pod_text(preset['source'])}", ""]
        if preset["fitted"]:
            lines += [f"Fitted: {pod_text(preset['fitted'])}", ""]
    return lines + ["=back", ""]


def main(argv):
    if len(argv) != 3:
        raise SystemExit("usage: render_pod.py CATALOG.json IN.pod OUT.pod")
    with open(argv[0], encoding="utf-8") as f:
        catalog = json.load(f)
    out = []
    with open(argv[1], encoding="utf-8") as f:
        for line in f.read().splitlines():
            match = DIRECTIVE.match(line)
            out += preset_list(catalog, match.group(1)) if match else [line]
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
