"""``python -m faux.data list`` / ``python -m faux.data info NAME``: what data is there.

Errors print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from faux.errors import FauxError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2 (argparse prints usage + message)
        raise FauxError(f"{message} (see python -m faux.data --help)")


def _fmt(value, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def cmd_list(root) -> int:
    from faux.data.registry import DATASETS, describe

    print(f"{'name':<12} {'kind':<5} {'present':<8} {'rows':>7} {'features':>8} "
          f"{'pos.rate':>8} {'c=1 rate':>8}")
    for name in DATASETS:
        try:
            d = describe(name, root)
        except FauxError as exc:  # a corrupt file: say so on its row, keep listing
            print(f"{name:<12} {'?':<5} {'error':<8} {str(exc)}")
            continue
        print(f"{name:<12} {d['kind']:<5} {'yes' if d['present'] else 'no':<8} "
              f"{_fmt(d['n_rows']):>7} {_fmt(d['n_features']):>8} "
              f"{_fmt(d['positive_rate'], '.3f'):>8} {_fmt(d.get('protected_rate'), '.3f'):>8}")
    return 0


def cmd_info(name: str, root) -> int:
    from faux.data.registry import describe

    print(json.dumps(describe(name, root), indent=2))
    return 0


def main(argv=None) -> int:
    parser = _Parser(prog="python -m faux.data",
                     description="List the datasets faux knows, or describe one.")
    parser.add_argument("--root", default=None,
                        help="data root (default: $FAUX_DATA_DIR, else ./data)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="one line per known dataset")
    info = sub.add_parser("info", help="facts about one dataset, as JSON")
    info.add_argument("name")
    try:
        args = parser.parse_args(argv)
        if args.command == "list":
            return cmd_list(args.root)
        return cmd_info(args.name, args.root)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
