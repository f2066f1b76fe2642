"""``recorder``: records the bench topics into a rosbag2 bag, where ``ros2 bag`` is absent.

Subscribes to each topic of ``topics`` (relative names: resolved in the node's
namespace, and recorded under the resolved name) with its QoS of
:mod:`bam_sim.common.contract` (``bam/bench_info`` and ``bam/trial``
transient local, so what was
published before the recorder joined is recorded too) and serialized
delivery (``raw=True``): the CDR bytes are written as they arrive, never
re-serialized, with rosbags' ``Writer`` (rosbag2 format as written by ROS 2
Jazzy, message definitions stored, so ``ros2 bag`` and
:func:`bam_identify.data.bag_reader.read_bag` read it). The bag time of a message is
the node clock at reception (sim time under ``use_sim_time``); readers use
the header stamps.

The bag is closed (metadata written) by :meth:`RecorderNode.close`, by
``destroy_node`` and on Ctrl-C / SIGTERM; :attr:`RecorderNode.counts` holds
the messages written per topic.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import importlib
import os
import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosbags.rosbag2 import Writer

from bam_identify.data.bag_folder import check_replaceable, remove_bag, writer_files
from bam_identify.data.bag_topics import ROSBAG2_VERSION, STORAGES, bag_qos
from bam_identify.data.bag_writer import FLUSH_PERIOD, flush_recording
from bam_identify.data.typestore import typestore
from bam_sim.common import contract
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.node_parameters import Param, declare, refuse_unknown, usage
from bam_sim.common.output_paths import DISK_FULL
from bam_sim.common.qos import profile
from bam_sim.common.runner import run_node

NODE_NAME = "recorder"
# Every topic of the bench interfaces the recorder knows the type and QoS of, by its
# name relative to the namespace ("/clock" is "clock").
KNOWN_TOPICS = {topic.name.lstrip("/"): topic for topic in (
    contract.JOINT_STATES, contract.ACTUATOR_STATES, contract.BENCH_INFO,
    contract.COMMANDS, contract.POSITION_COMMANDS, contract.JOINT_COMMANDS, contract.TRIAL,
    contract.CLOCK)}
DEFAULT_TOPICS = [topic.name for topic in contract.RECORDED]
# Default history depth of the recorder's subscriptions (at least the interface's): room
# for bursts (a simulator faster than real time) while the callbacks catch up. The
# queue is the reader's, so the recorder acknowledges at once and the publisher's
# shorter history never drops what the recorder has not taken. QoS compatibility
# ignores depth.
QUEUE_DEPTH = 10000
DRAIN = 1000  # messages a callback takes from its queue at most, besides its own
WRITE_PERIOD = 0.02  # s between two batches of the writer thread

PARAMETERS: tuple[Param, ...] = (
    Param("output", "", "bag folder to write ('' = bags/bench_<date>)", read_only=True),
    Param("storage", "mcap", "storage plugin: mcap or sqlite3", read_only=True),
    Param("topics", DEFAULT_TOPICS, "topics to record, among " + ", ".join(KNOWN_TOPICS)
          + " (relative to the namespace)", read_only=True),
    Param("overwrite", False, "replace an existing bag at output (only a bag or an empty "
          "folder)", read_only=True),
    Param("queue_depth", QUEUE_DEPTH, "history depth of each subscription (messages waiting "
          "to be taken)", read_only=True, low=1, high=10**6),
)


def default_output() -> str:
    return datetime.datetime.now().strftime("bags/bench_%Y-%m-%d_%H-%M-%S")


def message_class(type_name: str):
    """The rosidl Python class of ``pkg/msg/Name``."""
    package, _, name = type_name.partition("/msg/")
    try:
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except (ImportError, AttributeError):
        raise BamError(f"message type {type_name} is not available; build the workspace and "
                       "source install/setup.bash") from None


class RecorderNode(Node):
    """Records ``topics`` to the bag ``output`` (see the module docstring).

    Attributes: ``path`` (the bag folder), ``storage``, ``topics`` (recorded
    topic names), ``counts`` (topic -> messages written to the bag),
    ``dropped`` (topic -> messages received after :meth:`close` or lost to a
    write error), ``closed``, ``error`` (the first write error, or None).

    The bag belongs to a writer thread of its own (sqlite3 connections may
    only be used by the thread that opened them): subscription callbacks,
    from any executor thread, only queue the serialized bytes with their
    reception time (and take what else waits in their subscription's queue:
    executors take one message per wait), and the thread writes them in
    batches every 20 ms, so a slow disk never holds up the executor.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._lock = threading.Lock()
        self._pending: list = []  # (topic, stamp, bytes) received, not yet written
        self._stop = threading.Event()
        self._accepting = False
        self._thread: threading.Thread | None = None
        self._subscriptions_by_topic: dict = {}
        self.closed = False
        self.error: str | None = None
        try:
            self._configure()
        except BamError:
            self.closed = True
            super().destroy_node()
            raise

    def _configure(self) -> None:
        values = declare(self, PARAMETERS)
        refuse_unknown(self)  # a typo is refused before a bag is created
        output = str(values["output"]).strip() or default_output()
        self.storage = str(values["storage"]).strip().lower()
        if self.storage not in STORAGES:
            raise BamError(f"unknown storage '{self.storage}'; choose one of "
                           f"{', '.join(STORAGES)}")
        topics = [str(name).strip() for name in values["topics"]]
        if not topics:
            raise BamError("parameter topics is empty; give the topics to record")
        for name in topics:
            if name.lstrip("/") not in KNOWN_TOPICS:
                raise BamError(f"cannot record '{name}': not a bench topic; choose among "
                               f"{', '.join(KNOWN_TOPICS)}")
        # Resolved names (/ns/joint_states): what the bag stores and ros2 bag shows.
        self._given = {self.resolve_topic_name(name): name for name in topics}
        self.topics = list(self._given)
        depth = int(values["queue_depth"])
        self._kinds = {name: KNOWN_TOPICS[given.lstrip("/")]
                       for name, given in self._given.items()}
        classes = {name: message_class(self._kinds[name].type) for name in self.topics}
        self.path = Path(output).expanduser()
        check_replaceable(self.path, bool(values["overwrite"]),
                          "set the parameter overwrite to true")
        self.counts = dict.fromkeys(self.topics, 0)
        self.dropped = dict.fromkeys(self.topics, 0)
        self._open_bag()
        self._accepting = True
        group = MutuallyExclusiveCallbackGroup()  # one callback at a time: see _callback
        for name in self.topics:
            qos = profile(self._kinds[name].qos)
            qos = QoSProfile(history=qos.history, depth=max(qos.depth, depth),
                             reliability=qos.reliability, durability=qos.durability)
            self._subscriptions_by_topic[name] = self.create_subscription(
                classes[name], name, self._callback(name), qos, callback_group=group, raw=True)
        self.get_logger().info(f"recording {', '.join(self.topics)} to {self.path} "
                               f"({self.storage})")

    def _open_bag(self) -> None:
        """Start the writer thread once it has the bag open, its header on disk.

        A bag being replaced (overwrite) is set aside first and removed once the new
        one is open; when the new one cannot be (a full disk), what this made is
        removed, the old bag put back, and a BamError says so.
        """
        aside = None
        if self.path.exists():
            aside = self.path.with_name(f".{self.path.name}.replaced-{os.getpid()}")
            self.path.rename(aside)
        made = [f for f in (self.path, *self.path.parents) if not f.exists()]
        opened: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write_loop, args=(opened,),
                                        name=f"{NODE_NAME}-writer", daemon=True)
        self._thread.start()
        failure = opened.get()
        if failure is None:
            if aside is not None:
                remove_bag(aside)
            return
        self._thread.join()
        for file in writer_files(self.path):  # only what the writer makes, then the
            file.unlink(missing_ok=True)       # folders it made, each if left empty
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        undone = f"removed what it had created ({made[-1]})" if made else "nothing was made"
        if aside is not None:
            aside.rename(self.path)
            undone += "; the earlier bag is kept"
        raise BamError(f"cannot create bag {self.path}: {_reason(failure)}; {undone}")

    def _write_loop(self, opened: queue.SimpleQueue) -> None:
        """The writer thread: opens the bag, writes the received batches until close()."""
        try:
            writer = Writer(self.path, version=ROSBAG2_VERSION,
                            storage_plugin=STORAGES[self.storage])
            writer.open()
            store = typestore()
            connections = {
                name: writer.add_connection(name, self._kinds[name].type, typestore=store,
                                            offered_qos_profiles=[bag_qos(self._kinds[name].qos)])
                for name in self.topics}
            flush_recording(writer)  # the header on disk: a kill -9 leaves a bag to recover
        except Exception as err:  # rosbags raises several types (permissions, ...)
            opened.put(err)
            return
        opened.put(None)
        try:
            stopping = False
            flushed = time.monotonic()
            while not stopping:
                # Batches: a wake-up per message would cost a GIL hand-over per message.
                stopping = self._stop.wait(WRITE_PERIOD)
                with self._lock:
                    batch, self._pending = self._pending, []
                for topic, stamp, data in batch:
                    if self.error is None:
                        try:
                            writer.write(connections[topic], stamp, data)
                            self.counts[topic] += 1
                            continue
                        except Exception as err:
                            self.error = " ".join(str(err).split()) or type(err).__name__
                            self.get_logger().error(f"cannot write to bag {self.path}: "
                                                    f"{self.error}; recording stopped")
                    self.dropped[topic] += 1
                if self.error is None and time.monotonic() - flushed > FLUSH_PERIOD:
                    flushed = time.monotonic()  # what came before is in the file (kill -9)
                    self._flush(writer)
        finally:
            self._close_writer(writer)

    def _flush(self, writer: Writer) -> None:
        try:
            flush_recording(writer)
        except OSError as err:  # a full disk: the next writes fail alike
            self.error = _reason(err)
            self.get_logger().error(f"cannot write to bag {self.path}: {self.error}; "
                                    "recording stopped")

    def _close_writer(self, writer: Writer) -> None:
        """Close the bag (its metadata); when that fails (a full disk), say what is left."""
        try:
            writer.close()
        except Exception as err:  # rosbags raises several types  # noqa: BLE001
            self.error = self.error or _reason(err)
            self.get_logger().error(
                f"cannot close bag {self.path}: {_reason(err)}; the messages written before "
                f"are in it: once there is room, 'ros2 run bam_identify recover {self.path}' "
                "makes a complete bag of them")

    def _take(self, topic: str) -> bytes | None:
        """The next message waiting in the subscription's queue (serialized), or None.

        Executors take one message per subscription per wait; a simulator
        faster than real time publishes far more, so each callback also takes
        what else is already queued (lock held: no other take runs meanwhile).
        """
        sub = self._subscriptions_by_topic.get(topic)
        if sub is None:
            return None
        try:
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
        except Exception:  # destroyed, or an rclpy without this call: the executor takes
            self._subscriptions_by_topic.pop(topic, None)
            return None
        return None if taken is None else taken[0]

    def _callback(self, topic: str):
        clock = self.get_clock()

        first = [True]

        def receive(data: bytes) -> None:
            with self._lock:
                if not self._accepting:
                    self.dropped[topic] += 1
                    return
                if first[0]:  # tells a user (and a test) the topic is flowing
                    first[0] = False
                    self.get_logger().info(f"first message on {topic}")
                put = self._pending.append
                put((topic, clock.now().nanoseconds, data))
                for _ in range(DRAIN):
                    data = self._take(topic)
                    if data is None:
                        break
                    put((topic, clock.now().nanoseconds, data))

        return receive

    def close(self) -> None:
        """Write what was received, close the bag (metadata); later messages are dropped.

        Messages already delivered to the recorder's subscription queues but
        not yet taken are taken and written first.
        """
        with self._lock:
            if self.closed:
                return
            if self._accepting:
                for topic in self.topics:
                    while (data := self._take(topic)) is not None:
                        self._pending.append((topic, self.get_clock().now().nanoseconds,
                                              data))
            self.closed, self._accepting = True, False
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        counts = ", ".join(f"{topic} {n}" for topic, n in self.counts.items())
        self.get_logger().info(f"closed bag {self.path}: {counts}")

    def matched(self, topics: Iterable[str] | None = None) -> bool:
        """Each recorded topic (or each of ``topics``, as recorded: resolved names) has a
        publisher matched to the recorder: what it publishes from now on is recorded.

        A volatile topic's messages published before are not; a session starts its first
        trial once this holds.
        """
        subscriptions = self._subscriptions_by_topic
        return all(subscriptions[name].get_publisher_count() > 0
                   for name in (self.topics if topics is None else topics)
                   if name in subscriptions)

    def release(self) -> None:
        """What a stop must finish before anything may be cut: the bag written and closed."""
        self.close()

    def destroy_node(self) -> None:
        """Close the bag (the writer thread joined), destroy the subscriptions, then the
        node: the order of every node of the project."""
        self.close()
        for subscription in list(self._subscriptions_by_topic.values()):
            self.destroy_subscription(subscription)
        self._subscriptions_by_topic.clear()
        super().destroy_node()


def _reason(err: BaseException) -> str:
    """One line for a write that failed; a full disk named by its errno (ENOSPC), or by
    SQLite's code (it reports the disk's ENOSPC as its own error)."""
    if isinstance(err, OSError) and err.errno in DISK_FULL:
        return f"no space left ({errno.errorcode[err.errno]}: {err.strerror})"
    if getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return f"no space left (SQLITE_FULL: {one_line(err)})"
    return one_line(err)


def main(args: list[str] | None = None) -> int:
    return run_node(NODE_NAME, RecorderNode, usage(
        NODE_NAME, "Records the bench topics into a rosbag2 bag (bam_identify)", PARAMETERS),
        args)


if __name__ == "__main__":
    sys.exit(main())
