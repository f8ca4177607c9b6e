"""``python -m evalkit`` and the ``evalkit`` command. Ctrl-C while the command line loads is the same one line
and exit 130 as Ctrl-C during a command (which loads its own modules, pandas or PyMuPDF, as it runs)."""
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
