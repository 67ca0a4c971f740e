"""`free_port` hands out listening ports that outgoing connections cannot take first."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from hack.stack import processes
from hack.stack.processes import free_port


def _range_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    return path


def test_the_port_is_below_the_ephemeral_range_and_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE", _range_file(tmp_path, "40000\t60999\n"))
    ports = {free_port() for _ in range(20)}
    assert all(10_000 <= port < 40_000 for port in ports)
    assert len(ports) > 1  # picked at random, not a fixed sequence two test workers would share
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_in_use_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE", _range_file(tmp_path, "40000 60999"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy: int = taken.getsockname()[1]
        offered = iter([busy, busy, 12_345 if busy != 12_345 else 12_346])

        class Scripted:
            def randrange(self, low: int, high: int) -> int:
                return next(offered)

        monkeypatch.setattr(random, "SystemRandom", Scripted)
        assert free_port() in (12_345, 12_346)


def test_without_room_below_the_range_the_kernel_chooses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE", _range_file(tmp_path, "10500 60999"))
    port = free_port()
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert port >= low  # bound to port 0: the kernel's pick from its real range
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize("text", ["garbage", ""])
def test_an_unreadable_range_is_taken_as_linux_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       text: str) -> None:
    monkeypatch.setattr(processes, "_EPHEMERAL_RANGE", _range_file(tmp_path, text))
    assert all(10_000 <= free_port() < 32_768 for _ in range(10))
