"""Work done in every guest of a lab at once: each guest works on its own,
so a 4-node lab's steps take the slowest guest's time, not the sum."""
import concurrent.futures


def each_node(nodes, work):
    """{node: work(node)} for every node, run at once; the first node (in
    the given order) whose work raised re-raises it, after all have ended
    (leaving the pool waits for every one)."""
    nodes = list(nodes)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        futures = {node: pool.submit(work, node) for node in nodes}
        return {node: future.result() for node, future in futures.items()}
