"""`python -m releasegate` and the `releasegate` console script.

Ctrl-C while Python is still importing the command line (a second or more on a busy machine) would print a
KeyboardInterrupt traceback from deep inside some library; nothing has started then, so until the command line
takes interrupts over (`cli.app.main`), SIGINT ends the process at once with 'interrupted' and exit 130.
"""

import os
import signal
from types import FrameType


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def main() -> None:
    """Start the command line with Ctrl-C answered from the first line on."""
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from releasegate.cli import run

    run()


if __name__ == "__main__":
    main()
