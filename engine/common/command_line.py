"""What every command line of the project shares: errors as one line, never a traceback.

Both ``kraftd`` and ``metashell`` run their work through ``run_guarded``: an error from the
engine is printed as ``PROG: <what and where>`` on stderr with exit code 1; a broken pipe
(``| head``) ends quietly; Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from engine.common.errors import ConfigError, MetadataError


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one-line ConfigErrors like any other."""

    def error(self, message: str) -> None:
        raise ConfigError(message)


def stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")


def run_guarded(prog: str, work: Callable[[], int], err: Callable[[str], None] | None = None) -> int:
    """Run ``work`` and turn whatever escapes into one line on stderr and an exit code."""
    err = err or stderr_line
    try:
        return work()
    except MetadataError as exc:
        err(f"{prog}: {exc.one_line()}")
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (| head): nothing more to say
        return 0
    except KeyboardInterrupt:
        err(f"{prog}: interrupted")
        return 130
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err(f"{prog}: {where}{exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 - the promise is one line, never a traceback
        err(f"{prog}: internal error: {type(exc).__name__}: {exc}")
    return 1
