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


class ForgetfulAgent:
    """Answers guest-exec with a new pid each time; the first status
    question of each command times out (the agent's reply, saying it ended,
    came too late), the next says it does not know the pid, as qemu-ga does
    once it has reported a command's end."""

    def __init__(self):
        self.asked, self.pid, self.silent = [], 41, set()

    def command(self, domain, message, timeout_s, flags):
        request = json.loads(message)
        self.asked.append(request["execute"])
        if request["execute"] == "guest-exec":
            self.pid += 1
            return json.dumps({"return": {"pid": self.pid}})
        pid = request["arguments"]["pid"]
        if pid not in self.silent:
            self.silent.add(pid)
            raise FakeLibvirtError()
        if pid == 42:
            raise ForgottenPid()
        return json.dumps({"return": {"exited": True, "exitcode": 0, "out-data": "aGk="}})


class ForgottenPid(FakeLibvirtError):
    def get_error_message(self):
        return "internal error: unable to execute QEMU agent command 'guest-exec-status': Invalid parameter 'pid'"


@pytest.fixture
def forgetful(monkeypatch):
    stand_in = ForgetfulAgent()
    monkeypatch.setattr(agent, "_qemu", lambda: types.SimpleNamespace(qemuAgentCommand=stand_in.command))
    monkeypatch.setattr(agent, "_libvirt", lambda: types.SimpleNamespace(libvirtError=FakeLibvirtError))
    monkeypatch.setattr(agent, "AGENT_RETRY_S", 0.01)
    return stand_in


def test_a_result_lost_with_a_late_reply_is_said_and_a_reading_command_run_again(forgetful):
    # found in a lab sweep (hybrid-outstanding-io, 4 x 64 fio threads under TCG): the sweep
    # ended on "Invalid parameter 'pid'" after a status question had timed out
    with pytest.raises(agent.StatusLost, match="storlab-lab-node1: guest command 42 ended, but"):
        agent.run(FakeDomain(), ["/bin/cat", "x"])
    assert forgetful.asked == ["guest-exec", "guest-exec-status", "guest-exec-status"]
    # a command that only reads runs again: its second run's status came back
    assert agent.run(FakeDomain(), ["/bin/cat", "x"], again_if_lost=True) == (0, b"hi", b"")
    assert agent.run_checked(FakeDomain(), ["/bin/cat", "x"], "reading", again_if_lost=True) == b"hi"


def test_an_agent_that_never_knew_the_pid_is_not_a_lost_result(fake, monkeypatch):
    # an unknown pid with no unanswered question before it is an error of its own, given up
    # on after the patience
    stand_in = fake(failures=10 ** 6)
    monkeypatch.setattr(FakeLibvirtError, "get_error_message", lambda self: "Invalid parameter 'pid'")
    with pytest.raises(agent.AgentError) as e:
        agent.poll(FakeDomain(), 7, patience_s=0.1)
    assert not isinstance(e.value, agent.StatusLost) and len(stand_in.asked) > 1
