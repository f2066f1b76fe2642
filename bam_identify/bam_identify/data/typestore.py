"""Message types of a bench recording, for reading and writing rosbag2 without ROS.

The rosbags type store of ROS 2 Jazzy holds the standard interfaces
(``sensor_msgs/msg/JointState``, ``std_msgs/msg/Header``, ...); the
``bam_msgs`` messages are parsed from their ``.msg`` files, found in the
``share/bam_msgs/msg`` folder of an installed workspace (every prefix of
``AMENT_PREFIX_PATH``) or, failing that, in the source tree next to this
package. No ROS module is imported.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from bam_sim.common.errors import BamError

PACKAGE = "bam_msgs"

# Message type names of the bench topics.
JOINT_STATE = "sensor_msgs/msg/JointState"
ACTUATOR_STATE = f"{PACKAGE}/msg/ActuatorState"
ACTUATOR_STATE_ARRAY = f"{PACKAGE}/msg/ActuatorStateArray"
BENCH_INFO = f"{PACKAGE}/msg/BenchInfo"
TRIAL = f"{PACKAGE}/msg/Trial"
HEADER = "std_msgs/msg/Header"
TIME = "builtin_interfaces/msg/Time"

# The messages a bench recording needs from bam_msgs.
REQUIRED = ("ActuatorState", "ActuatorStateArray", "BenchInfo", "Trial")


def _candidates() -> list[Path]:
    """Folders that may hold the bam_msgs .msg files, in order of preference."""
    folders = [Path(prefix) / "share" / PACKAGE / "msg"
               for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if prefix]
    # Source tree: <repo>/bam_identify/bam_identify/typestore.py -> <repo>/bam_msgs/msg
    folders.append(Path(__file__).resolve().parents[3] / PACKAGE / "msg")
    return folders


def msg_folder() -> Path:
    """The folder holding the bam_msgs ``.msg`` files (installed first, then sources)."""
    for folder in _candidates():
        if all((folder / f"{name}.msg").is_file() for name in REQUIRED):
            return folder
    raise BamError(f"cannot find the {PACKAGE} message definitions (share/{PACKAGE}/msg/*.msg "
                   "under AMENT_PREFIX_PATH or in the source tree); build the workspace and "
                   "source install/setup.bash")


def bam_msg_definitions() -> dict[str, str]:
    """Full type name -> text of every ``.msg`` file of bam_msgs."""
    folder = msg_folder()
    return {f"{PACKAGE}/msg/{path.stem}": path.read_text(encoding="utf-8")
            for path in sorted(folder.glob("*.msg"))}


# Fields appended to a message after bags were recorded without them (the line that
# declares the first): a bag that stores no definitions is decoded with the text before it.
APPENDED = {BENCH_INFO: "string unit"}


@functools.cache
def typestore() -> Typestore:
    """A type store of ROS 2 Jazzy plus the bam_msgs messages (built once, cached).

    Treat it as read-only: it is shared by every caller of this process.
    """
    return _store(bam_msg_definitions())


@functools.cache
def legacy_typestore() -> Typestore:
    """:func:`typestore` with the messages as they were before :data:`APPENDED`."""
    texts = bam_msg_definitions()
    for name, line in APPENDED.items():
        texts[name] = texts[name].split(f"\n{line}", 1)[0] + "\n"
    return _store(texts)


def _store(definitions: dict[str, str]) -> Typestore:
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict = {}
    for name, text in definitions.items():
        try:
            types.update(get_types_from_msg(text, name))
        except Exception as err:  # the parser raises several exception types
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise BamError(f"cannot parse the message definition {name} ({first}); "
                           "rebuild bam_msgs") from None
    try:
        store.register(types)
    except TypesysError as err:
        raise BamError(f"cannot register the {PACKAGE} messages ({err}); rebuild bam_msgs") \
            from None
    return store
