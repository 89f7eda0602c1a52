"""Work done in every guest of a lab at once: each guest works on its own,
so a 4-node lab's steps take the slowest guest's time, not the sum.

Ctrl-C reaches the main thread only, and leaving a thread pool waits for
every thread: a node's work (all of a node's provisioning steps, minutes
at lab scale) would run to its end before `up` could roll back. So when
the main thread is interrupted, the work of that call is told to stop:
a worker's next guest command or wait on one (lab/agent.py) raises
Stopped instead, and the interrupt goes on once every worker has ended."""
import concurrent.futures
import threading

_worker = threading.local()


class Stopped(Exception):
    """The user interrupted the command this work belongs to."""


def raise_if_stopped():
    """In a worker of each_node whose caller was interrupted: raises Stopped.
    Elsewhere (the main thread, or work not interrupted) does nothing."""
    stop = getattr(_worker, "stop", None)
    if stop is not None and stop.is_set():
        raise Stopped("interrupted")


def each_node(nodes, work):
    """{node: work(node)} for every node, run at once; the first node (in
    the given order) whose work raised re-raises it, after all have ended
    (leaving the pool waits for every one). Work that calls each_node
    itself shares its caller's stop."""
    nodes = list(nodes)
    stop = getattr(_worker, "stop", None) or threading.Event()

    def run(node):
        _worker.stop = stop
        try:
            return work(node)
        finally:
            _worker.stop = None

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        futures = {node: pool.submit(run, node) for node in nodes}
        try:
            return {node: future.result() for node, future in futures.items()}
        except KeyboardInterrupt:
            stop.set()
            raise
