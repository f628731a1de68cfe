# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The gpuasync package's CUDA IPC path on a GPU, against a mount of the
simulated card with buffers in GPU memory (gpu_ipc.sh mounts it and passes
the mount point).  Standard library only, like the package: no pytest, so
that it runs on any GPU machine.  Prints "FAILED at <case>: why" and exits
1 on the first failure.

The bytes compared are the card's own: a frame of the `counter` pattern
(32-bit little-endian word k = frame number + k), its 8-byte header at +0
and payload at +device/dma_data_bytes, read in this process through the
buffer's IPC handle (cuMemcpyDtoH) and checked against the header the mount
decodes, the payload the mount reads, and the pattern computed here.
"""
import ctypes
import os
import struct
import sys

import gpuasync

CASE = "start"


def check(cond, why):
    if not cond:
        print("FAILED at %s: %s" % (CASE, why))
        sys.exit(1)


def counter_pattern(frame, nbytes):
    words = (nbytes + 3) // 4
    return struct.pack("<%dI" % words, *((frame + k) & 0xffffffff
                                         for k in range(words)))[:nbytes]


def sim_stat(card, name):
    return int(card.read("sim/stats/" + name), 0)


def current_context(cu):
    ctx = ctypes.c_void_p()
    cu.lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    check(cu.lib.cuCtxGetCurrent(ctypes.byref(ctx)) == 0, "cuCtxGetCurrent failed")
    return ctx.value


def main(mnt):
    global CASE
    card = gpuasync.Card(mnt)

    CASE = "memory"
    check(card.device.memory == "gpu", "device/memory is %r (%s)"
          % (card.device.memory, card.device.memory_note))
    ddb = card.device.dma_data_bytes

    CASE = "open"
    buf = card.create_buffer(size=1 << 20)
    handle = buf.ipc_handle()
    check(len(handle) == 64, "ipc_handle is %d bytes" % len(handle))
    with buf.open_ipc() as m:
        check(m.size == buf.size == 1 << 20,
              "mapping %d bytes, buffers/0/size %d" % (m.size, buf.size))
        check(m.pointer, "device pointer 0")
        print("open: %r" % m)
        # Push and pop are balanced: the thread has no current context
        # after a call, as before it (a fresh process: none).
        check(current_context(gpuasync._driver()) is None,
              "a context is left current on the calling thread")

    CASE = "frame"
    size = 5001  # not whole words: the last word's first byte ends it
    frame = sim_stat(card, "generated")  # the next frame's number
    card.sim.pattern = "counter"
    card.sim.size = size
    buf.arm()
    card.registers.write_enable = 1
    card.sim.remaining = 1
    card.sim.running = 1
    hdr = buf.wait_frame(timeout=30)
    card.registers.write_enable = 0
    check(sim_stat(card, "delivered") == 1, "sim/stats/delivered %d" % sim_stat(card, "delivered"))
    check(hdr.size == size and hdr.result == 0 and hdr.overflow == 0,
          "buffers/0/header %s" % (hdr,))
    raw = buf.gpu_bytes(0, ddb + size)
    flags, got_size = struct.unpack_from("<II", raw, 0)
    check(got_size == size, "size word %d through the handle, not %d" % (got_size, size))
    check(flags & 0x3 == hdr.result and (flags >> 2) & 1 == hdr.overflow and
          (flags >> 3) & 1 == hdr.cont and (flags >> 16) & 0xff == hdr.last_user and
          (flags >> 24) & 0xff == hdr.first_user,
          "flags word 0x%08x through the handle, mount's header %s" % (flags, hdr))
    check((flags >> 24) & 0xff == card.sim.first_user,
          "first_user %d, sim/first_user %d" % ((flags >> 24) & 0xff, card.sim.first_user))
    payload = raw[ddb:]
    check(payload == buf.data(), "payload through the handle differs from buffers/0/data")
    want = counter_pattern(frame, size)
    check(payload == want, "payload is not the counter pattern of frame %d: %s... not %s..."
          % (frame, payload[:16].hex(), want[:16].hex()))
    print("frame: %d-byte header+payload through the IPC handle as the card wrote them" % size)

    CASE = "read_buffer"
    rbuf = card.create_buffer(size=1 << 20, read=True)
    data = os.urandom(100000)
    with rbuf.open_ipc() as m:
        m.write(data, ddb)
        check(rbuf.data()[:len(data)] == data,
              "bytes written through the handle differ in read_buffers/0/data")
        back = os.urandom(4096)
        rbuf.write_data(back)
        check(m.read(ddb, len(back)) == back,
              "bytes written to read_buffers/0/data differ through the handle")
    print("read_buffer: 100000 bytes handle->data and 4096 bytes data->handle identical")

    CASE = "misuse"
    m = buf.open_ipc()
    m.close()
    m.close()  # a second close does nothing
    try:
        m.read(0, 8)
        check(False, "read after close did not raise")
    except ValueError:
        pass
    with buf.open_ipc() as m:
        try:
            m.read(m.size - 4, 8)
            check(False, "read past the end did not raise")
        except ValueError:
            pass
    try:
        gpuasync.GpuMapping(bytes(64))
        check(False, "an all-zero handle opened")
    except gpuasync.CudaError as e:
        check(e.code and e.name.startswith("CUDA_ERROR_"), "CudaError %r" % (e,))
        print("misuse: all-zero handle: %s" % e)

    CASE = "rmdir"
    rbuf.remove()
    buf.remove()
    check(card.buffers() == [] and card.buffers(read=True) == [], "buffers left")
    print("gpu_ipc.py: OK")


if __name__ == "__main__":
    main(sys.argv[1])
