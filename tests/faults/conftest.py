"""What the fault tests share: a Redis of a test's own that can be stopped, and controllers that misbehave
on the way to the real slurmctld (silent, slow, or losing its answers)."""

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from jobs.models import Job
from tests.behaviour_helpers import slurm_conf_with
from tests.service_account import free_port

#: Where the lab's slurmctld listens (/etc/slurm/slurm.conf SlurmctldPort).
CONTROLLER = ("127.0.0.1", 6817)


class Broker:
    """A redis-server of this test's own that can be stopped and started again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout != b"PONG\n":
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def broker() -> Iterator[Broker]:
    own = Broker()
    own.start()
    yield own
    own.stop()


def wait_for(job: Job, *statuses: str, seconds: float = 120, nudge: Callable[[], object] | None = None) -> Job:
    """Wait until the job is in one of `statuses`, calling `nudge` (one beat cycle) each second."""
    deadline = time.monotonic() + seconds
    job.refresh_from_db()
    while job.status not in statuses:
        assert time.monotonic() < deadline, f"job still {job.status}: {job.message}"
        if nudge:
            nudge()
        time.sleep(1)
        job.refresh_from_db()
    return job


def running(user: str, pattern: str) -> bool:
    """A process of `user` whose command line matches `pattern` (pgrep -f) is running."""
    return subprocess.run(["pgrep", "-u", user, "-f", pattern], capture_output=True).returncode == 0


def sbatch_running_for(job: Job) -> bool:
    """An sbatch of this job is running (as the student)."""
    return running(job.run_as, f"sbatch .*--job-name={job.slurm_name}")


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


class ControllerProxy:
    """A controller address for SLURM_CONF that relays to the lab's real slurmctld, misbehaving on the way:
    holding each request `delay` seconds (a slow controller), or passing requests on and dropping the
    answers (the controller acts, its reply is lost: sbatch waits until its MessageTimeout)."""

    def __init__(self, *, delay: float = 0.0, drop_replies: bool = False) -> None:
        self.delay = delay
        self.drop_replies = drop_replies
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client = self.listener.accept()[0]
            except OSError:
                return
            self.open.append(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        time.sleep(self.delay)
        try:
            upstream = socket.create_connection(CONTROLLER, timeout=30)
        except OSError:
            client.close()
            return
        self.open.append(upstream)
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        self._pump(upstream, None if self.drop_replies else client)

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket | None) -> None:
        try:
            while data := source.recv(65536):
                if target is not None:
                    target.sendall(data)
        except OSError:
            pass
        finally:
            if target is not None:
                try:
                    target.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
        for connection in self.open:
            connection.close()


@pytest.fixture
def controller(job_root) -> Iterator[Callable[..., str]]:
    """controller(delay=..., drop_replies=...) → SLURM_CONF reaching the real slurmctld through a proxy.
    An 8-second MessageTimeout bounds how long a client waits for a lost answer."""
    proxies: list[ControllerProxy] = []

    def make(**behaviour) -> str:
        proxy = ControllerProxy(**behaviour)
        proxies.append(proxy)
        return slurm_conf_with(job_root / f"controller-{len(proxies)}", SlurmctldPort=proxy.port, MessageTimeout=8)

    yield make
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A controller port that accepts connections and then says nothing."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for connection in held:
        connection.close()


@pytest.fixture
def silent_controller(job_root, silent_port) -> str:
    """SLURM_CONF for a controller that says nothing (readable by the students): a client gives up after its
    8-second MessageTimeout."""
    return slurm_conf_with(job_root / "silent-controller", SlurmctldPort=silent_port, MessageTimeout=8)
