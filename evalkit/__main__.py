"""``python -m evalkit`` and the ``evalkit`` command. The CLI's imports (pandas, PyMuPDF, ...) take about a
second: Ctrl-C during them is the same one line and exit 130 as Ctrl-C during a command."""
import sys


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("evalkit: interrupted", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
