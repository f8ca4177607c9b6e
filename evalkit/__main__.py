"""``python -m evalkit`` and the ``evalkit`` command. Ctrl-C while the command line loads is the same one line
and exit 130 as Ctrl-C during a command (which loads its own modules, pandas or PyMuPDF, as it runs)."""
import sys

# jsonschema, which nbformat (``evalkit report``) and the MCP SDK (the ``mcp`` arm) import, imports
# rfc3987-syntax where it is installed (JupyterLab's jupyter-events asks for it), and that compiles 38 Lark
# grammars as it loads: 3 CPU-seconds of every such command (python-jsonschema/jsonschema#1428). It checks
# only the "iri" string format, which nothing evalkit runs asks for; the command's process does without it.
# The library leaves a user's own process alone.
WITHOUT = ("rfc3987_syntax",)


def main() -> int:
    for name in WITHOUT:
        if name not in sys.modules:  # None: an import of it fails, as if it were not installed
            sys.modules[name] = None  # type: ignore[assignment]
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("evalkit: interrupted", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
