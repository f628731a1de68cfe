# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The gpuasync Python package against a real gpuasyncfs mount of the
simulated card (the daemon: $GA_GPUASYNCFS).  Every wait is for an event
(poll on the mount's live files) with a generous bound."""
import contextlib
import errno
import os
import struct
import subprocess
import time

import pytest

import gpuasync


@contextlib.contextmanager
def mounted(tmp_path, *opts):
    """A gpuasync.Card on a fresh `gpuasyncfs --sim` mount with opts."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    daemon = subprocess.Popen([os.environ["GA_GPUASYNCFS"], "-f", "--sim", *opts, str(mnt)])
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        assert daemon.poll() is None, "gpuasyncfs exited before mounting"
        assert time.monotonic() < deadline, "gpuasyncfs did not mount in 30 s"
        time.sleep(0.01)
    try:
        yield gpuasync.Card(str(mnt))
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
            pytest.fail("gpuasyncfs did not exit after unmount")
        assert daemon.returncode == 0


@pytest.fixture
def card(tmp_path):
    with mounted(tmp_path) as c:
        yield c


def cat(card, rel):
    return subprocess.run(["cat", os.path.join(card.path, rel)], capture_output=True,
                          text=True, check=True).stdout


def test_registers_come_from_the_mounts_listing(card):
    listed = sorted(n for n in os.listdir(os.path.join(card.path, "registers")) if n != "raw")
    assert dir(card.registers) == listed
    assert "rx_frame_count" in listed
    assert card.registers.version == int(cat(card, "registers/version"), 0)
    assert card.device.backend == "sim"
    assert card.firmware.git_hash == cat(card, "device/firmware/git_hash").strip()
    with pytest.raises(AttributeError):
        card.registers.no_such_register
    with pytest.raises(AttributeError):
        card.registers.raw  # binary: not an attribute


def test_pyrogue_names(card):
    names = card.pyrogue_names()
    assert names["AxiGpuAsyncCore.RxFrameCnt"] == "registers/rx_frame_count"
    assert card.pyrogue("AxiGpuAsyncCore.VersionNumber") == card.registers.version
    assert card.pyrogue("AxiVersion.GitHash") == card.firmware.git_hash
    with pytest.raises(KeyError):
        card.pyrogue("AxiGpuAsyncCore.NoSuchThing")


def test_register_write_reaches_the_card(card):
    card.registers.demux_select = 0
    assert cat(card, "registers/demux_select").strip() == "0"
    card.registers.demux_select = 1
    assert cat(card, "registers/demux_select").strip() == "1"


def test_refusal_carries_the_errors_line(card):
    with pytest.raises(gpuasync.GpuAsyncError) as e:
        card.registers.version = 7
    assert e.value.errno == errno.EACCES
    assert e.value.reason and "registers/version" in e.value.reason
    assert e.value.reason == card.errors()[-1]
    assert card.registers.version == int(cat(card, "registers/version"), 0)
    before = card.registers.ar_cache
    with pytest.raises(gpuasync.GpuAsyncError) as e:
        card.registers.ar_cache = 99
    assert e.value.errno == errno.ERANGE
    assert "registers/ar_cache" in e.value.reason and "0..15" in e.value.reason
    assert card.registers.ar_cache == before


def test_bad_buffer_size_is_refused_and_nothing_made(card):
    with pytest.raises(gpuasync.GpuAsyncError) as e:
        card.create_buffer(size=12345)
    assert e.value.errno == errno.EINVAL
    assert e.value.reason and "alloc_size" in e.value.reason
    assert card.buffers() == []


def test_buffer_frame_and_cleanup(card):
    card.sim.size = 4096
    card.sim.pattern = "counter"
    with card.create_buffer() as buf:
        assert os.path.isdir(os.path.join(card.path, "buffers/0"))
        assert buf.status == "IDLE"
        buf.arm()
        card.registers.write_enable = 1
        card.sim.remaining = 1
        card.sim.running = 1
        hdr = buf.wait_frame(timeout=30)
        assert hdr.size == 4096 and hdr.result == 0 and hdr.overflow == 0
        assert hdr.first_user == int(cat(card, "sim/first_user"), 0)
        payload = buf.data()
        assert len(payload) == 4096
        # A delivered frame, not a dropped one's header: the counter
        # pattern's words (word k = frame number + k).
        words = struct.unpack("<1024I", payload)
        assert all(w == (words[0] + k) & 0xFFFFFFFF for k, w in enumerate(words))
        with open(os.path.join(card.path, "buffers/0/data"), "rb") as f:
            assert payload == f.read()
        try:
            import numpy
        except ImportError:
            if os.environ.get("CI") == "true":
                raise
        else:
            assert numpy.array_equal(buf.numpy(), numpy.frombuffer(payload, "uint8"))
    assert not os.path.exists(os.path.join(card.path, "buffers/0"))
    assert card.buffers() == []


def test_wait_counter_wakes_on_frames(card):
    card.sim.size = 4096
    with card.create_buffer() as b0, card.create_buffer() as b1:
        assert [b.index for b in card.buffers()] == [0, 1]
        start = card.registers.rx_frame_count
        delivered = int(cat(card, "sim/stats/delivered"))
        dropped = int(cat(card, "sim/stats/dropped"))
        b0.arm()
        b1.arm()
        card.registers.write_enable = 1
        card.sim.remaining = 2
        card.sim.running = 1
        assert card.wait_counter("rx_frame_count", start + 2, timeout=30) >= start + 2
        # rx_frame_count counts dropped frames too: the two frames it
        # waited for are the two the buffers hold, none dropped.
        assert int(cat(card, "sim/stats/delivered")) == delivered + 2
        assert int(cat(card, "sim/stats/dropped")) == dropped
        for b in (b0, b1):
            hdr = b.header
            assert hdr.size == 4096 and hdr.result == 0 and hdr.overflow == 0


def test_wait_times_out(card):
    with pytest.raises(TimeoutError):
        card.wait("registers/rx_frame_count", lambda t: int(t, 0) > 10**12, timeout=0.3)


def test_not_a_mount(tmp_path):
    with pytest.raises(FileNotFoundError):
        gpuasync.Card(str(tmp_path))


def test_host_memory_buffer_has_no_ipc_handle(tmp_path):
    # GPU memory is tested by python_gpu_ipc (gpu_ipc.sh) on a GPU machine.
    with mounted(tmp_path, "-o", "use_gpu=0") as card:
        assert card.device.memory == "host"
        with card.create_buffer() as buf:
            for call in (buf.ipc_handle, buf.open_ipc, buf.gpu_bytes):
                with pytest.raises(gpuasync.GpuAsyncError) as e:
                    call()
                assert e.value.errno == errno.ENOENT
                assert e.value.filename.endswith("buffers/0/ipc_handle")
