"""A controller's peak memory counts its forked snapshot writer's own pages (engine.bench.node_memory)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from engine.bench.node_memory import NodeMemoryWatch, children_of, node_kb, private_kb

# A parent that forks a child; the child then writes 200 MiB of its own and waits to be killed.
PARENT = textwrap.dedent("""
    import os, sys, time
    pid = os.fork()
    if pid == 0:
        block = bytearray(200 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        print("ready", flush=True)
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
    sys.stdin.read()
    os.kill(pid, 9)
    os.waitpid(pid, 0)
""")


def test_a_childs_private_pages_are_counted_in_the_nodes_peak_and_not_in_the_parents_hwm() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "ready"
        assert children_of(parent.pid) == [child]
        assert private_kb(child) > 190 * 1024
        watch = NodeMemoryWatch({1: parent.pid}, interval_s=0.05).start()
        watch.sample_once()
        peaks = watch.stop()
        with open(f"/proc/{parent.pid}/status") as status:
            hwm_mb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
        assert hwm_mb < 100  # the parent itself never held the child's block
        assert peaks[1] > hwm_mb + 190
        assert node_kb(parent.pid) > 190 * 1024
    finally:
        parent.stdin.close()
        parent.wait(10)


def test_without_children_the_peak_is_the_processs_own_high_water_mark() -> None:
    lone = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        watch = NodeMemoryWatch({7: lone.pid}, interval_s=0.05).start()
        peaks = watch.stop()
        with open(f"/proc/{lone.pid}/status") as status:
            hwm_mb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
        assert children_of(lone.pid) == [] and abs(peaks[7] - hwm_mb) < 1
    finally:
        lone.stdin.close()
        lone.wait(10)
