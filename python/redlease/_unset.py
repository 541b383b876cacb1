"""One marker for an argument left out where None is a value of its own (``max_hold=None``: no
cap; ``lease=None``: the watchdog): the client's (or the lock's) default applies."""

import enum
from typing import Final, Union


class Unset(enum.Enum):
    """An argument left out: the default of the client (or of the lock) applies."""
    UNSET = "the default"


UNSET: Final = Unset.UNSET

# Seconds, None (no cap) or left out (the client's cap).
MaxHold = Union[float, None, Unset]
