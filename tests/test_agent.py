"""The guest agent's client (scripts/storlab_cli/lab/agent.py) when the
agent does not answer: a busy TCG guest can leave a reply late, and libvirt
then calls the agent unavailable until it answers again. libvirt's
qemuAgentCommand is stood in for by a function that fails the first
answers it is asked for, as libvirt does, then answers."""
import json
import types

import pytest

from storlab_cli.lab import agent


class FakeLibvirtError(Exception):
    def get_error_message(self):
        return "Guest agent is not responding: Guest agent not available for now"


class FakeDomain:
    def name(self):
        return "storlab-lab-node1"


class Agent:
    """Fails `failures` commands, then answers guest-exec-status as exited."""

    def __init__(self, failures):
        self.failures, self.asked = failures, []

    def command(self, domain, message, timeout_s, flags):
        self.asked.append(json.loads(message)["execute"])
        if self.failures > 0:
            self.failures -= 1
            raise FakeLibvirtError()
        if json.loads(message)["execute"] == "guest-exec":
            return json.dumps({"return": {"pid": 42}})
        return json.dumps({"return": {"exited": True, "exitcode": 0, "out-data": "aGk="}})


@pytest.fixture
def fake(monkeypatch):
    def make(failures):
        stand_in = Agent(failures)
        monkeypatch.setattr(agent, "_qemu",
                            lambda: types.SimpleNamespace(qemuAgentCommand=stand_in.command))
        monkeypatch.setattr(agent, "_libvirt",
                            lambda: types.SimpleNamespace(libvirtError=FakeLibvirtError))
        monkeypatch.setattr(agent, "AGENT_RETRY_S", 0.01)
        return stand_in
    return make


def test_a_status_question_is_asked_again_until_the_agent_answers(fake):
    stand_in = fake(failures=3)
    assert agent.poll(FakeDomain(), 42) == (0, b"hi", b"")
    assert stand_in.asked == ["guest-exec-status"] * 4


def test_an_agent_that_stays_silent_is_given_up_on_in_one_line(fake):
    stand_in = fake(failures=10 ** 6)
    with pytest.raises(agent.AgentError) as e:
        agent.poll(FakeDomain(), 42, patience_s=0.1)
    assert str(e.value) == ("storlab-lab-node1: the guest agent did not answer "
                            "guest-exec-status: Guest agent is not responding: Guest agent not "
                            "available for now")
    assert len(stand_in.asked) > 1


def test_a_command_that_starts_something_is_not_sent_twice(fake):
    # the agent may have run it and only its reply was lost: a second
    # guest-exec could start the same fio twice
    stand_in = fake(failures=1)
    with pytest.raises(agent.AgentError, match="did not answer guest-exec:"):
        agent.start(FakeDomain(), ["/usr/bin/fio", "job.fio"])
    assert stand_in.asked == ["guest-exec"]
    assert agent.start(FakeDomain(), ["/usr/bin/fio", "job.fio"]) == 42
