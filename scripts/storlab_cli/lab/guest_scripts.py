"""The storage profile's guest scripts (scripts/profiles/, in the appliance
at GUEST_DIR), called through the guest agent: one step a call, its
"key value" output lines parsed."""
from storlab_cli.lab import agent

GUEST_DIR = "/usr/lib/storlab/profiles"
STEP_TIMEOUT_S = 900
# A step that builds many items at once (a node's volumes) gets this much
# more for each item after the first: what one step of one item took before.
ITEM_TIMEOUT_S = 300


def step_timeout_s(items):
    """The time a step building `items` items may take."""
    return STEP_TIMEOUT_S + ITEM_TIMEOUT_S * max(0, items - 1)


def run_step(domain, node, script, args, timeout_s=STEP_TIMEOUT_S):
    """Runs one guest script; returns its "key value" lines as a dict of lists."""
    argv = ["/bin/sh", f"{GUEST_DIR}/{script}"] + [str(a) for a in args]
    out = agent.run_checked(domain, argv, f"profile step {script} on {node} failed",
                            timeout_s=timeout_s)
    result = {}
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key:
            result.setdefault(key, []).append(value)
    return result
