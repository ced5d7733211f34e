"""The answer threads kept between answers: reused, never lose a task, leave when idle."""

from __future__ import annotations

import threading

from flare.server.runner import Workers


def _wait_idle(workers: Workers, count: int) -> None:
    for _ in range(500):
        if workers.idle == count:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{workers.idle} idle workers, expected {count}")


def test_an_idle_thread_takes_the_next_task() -> None:
    workers = Workers(idle_exit=30)
    seen: list[int] = []
    done = threading.Event()

    def task() -> None:
        seen.append(threading.get_ident())
        done.set()

    workers.submit(task)
    assert done.wait(10)
    _wait_idle(workers, 1)
    done.clear()
    workers.submit(task)
    assert done.wait(10)
    assert seen[0] == seen[1]  # the same thread: no new one was started


def test_many_tasks_at_once_all_run_and_a_failing_one_leaves_the_thread_usable() -> None:
    workers = Workers(idle_exit=30)
    ran: list[int] = []
    lock = threading.Lock()
    all_done = threading.Event()
    total = 60

    def task(i: int) -> None:
        with lock:
            ran.append(i)
            if len(ran) == total:
                all_done.set()
        if i % 7 == 0:
            raise RuntimeError("a task that fails")  # logged; the thread goes on

    for round_ in range(3):
        for i in range(round_ * 20, round_ * 20 + 20):
            workers.submit(lambda i=i: task(i))
    assert all_done.wait(30)
    assert sorted(ran) == list(range(total))
    threads = {t.ident for t in threading.enumerate() if t.name == "flare-answer"}
    assert workers.idle <= len(threads)


def test_threads_leave_after_being_idle() -> None:
    workers = Workers(idle_exit=0.05)
    done = threading.Event()
    workers.submit(done.set)
    assert done.wait(10)
    _wait_idle(workers, 0)  # it waited idle_exit for another task, then ended
    again = threading.Event()
    workers.submit(again.set)  # a new thread is started for the next one
    assert again.wait(10)
