"""Render out/results.jsonl (from run.sh) as markdown matrices, or gate on it.

  python matrix.py RESULTS                 # the matrices (out/matrix.md)
  python matrix.py RESULTS --expect FILE   # exit 1 if a cell listed in FILE failed
  python matrix.py RESULTS --list-passing  # every passing cell, FILE's format

A cell is "mode client agent op"; it passes only if the client reported "ok"
for that op. In FILE, blank lines and text after '#' are ignored.
"""
import json
import sys

OPS = ['send', 'stream', 'get', 'cancel', 'multiturn']
MODES = ('direct', 'gateway', 'fleet')
TITLES = {'direct': 'direct (no gateway)',
          'gateway': 'gateway (/agents/NAME)',
          'fleet': 'fleet (gateway root, routed by skillId)'}


def load(path: str) -> list[dict]:
    return [json.loads(x) for x in open(path) if x.strip()]


def cells(rows: list[dict]) -> dict[tuple, str]:
    """(mode, client, agent, op) -> 'ok' or the failure text."""
    out = {}
    for r in rows:
        ops = r['r'].get('ops') or {}
        for op in OPS:
            out[(r['mode'], r['client'], r['agent'], op)] = ops.get(op) or 'missing'
    return out


def render(rows: list[dict]) -> None:
    notes: list[str] = []
    transports: list[str] = []
    for mode in MODES:
        rs = [r for r in rows if r['mode'] == mode]
        if not rs:
            continue
        agents = list(dict.fromkeys(r['agent'] for r in rs))
        clients = list(dict.fromkeys(r['client'] for r in rs))
        print(f'\n### {TITLES[mode]}\n')
        print('| client \\ agent | ' + ' | '.join(agents) + ' |')
        print('|---' * (len(agents) + 1) + '|')
        for c in clients:
            row = []
            for a in agents:
                r = next((x for x in rs if x['client'] == c and x['agent'] == a), None)
                if r is None:
                    row.append('-')
                    continue
                ops = r['r'].get('ops') or {}
                bad = [o for o in OPS if ops.get(o) != 'ok']
                cell = f'{len(OPS) - len(bad)}/{len(OPS)}'
                cell += f" ✗{','.join(bad)}" if bad else ''
                cu = r['r'].get('card_url', '')
                # A gRPC interface is a bare host:port: the gateway's own.
                at = r['base'] if '://' in cu else r['base'].split('://')[-1].split('/')[0]
                if mode != 'direct' and cu and not cu.startswith(at):
                    cell += ' (card URL bypasses gateway!)'
                row.append(cell)
                if bad:
                    first = ops.get(bad[0]) or 'missing'
                    notes.append(f'- {mode} {c}→{a} {bad[0]}: {first[:200]}')
                if r['r'].get('transport'):
                    transports.append(f"{mode} {c}→{a}: {r['r']['transport']}")
            print(f'| {c} | ' + ' | '.join(row) + ' |')
    if transports:
        print('\nTransport the JS SDK picked from the card:\n')
        print('\n'.join(f'- {t}' for t in transports))
    if notes:
        print('\nFirst error per failing cell:\n')
        print('\n'.join(notes))


def read_expect(path: str) -> list[tuple]:
    want = []
    for n, line in enumerate(open(path), 1):
        line = line.split('#', 1)[0].split()
        if not line:
            continue
        if len(line) != 4 or line[0] not in MODES or line[3] not in OPS:
            print(f'{path}:{n}: expected "mode client agent op", got '
                  f'{" ".join(line)!r}', file=sys.stderr)
            sys.exit(2)
        want.append(tuple(line))
    return want


def gate(rows: list[dict], path: str) -> int:
    got = cells(rows)
    want = read_expect(path)
    failed = [(k, got.get(k, 'not run')) for k in want if got.get(k) != 'ok']
    extra = sorted(k for k, v in got.items() if v == 'ok' and k not in set(want))
    print(f'\ngate ({path}): {len(want) - len(failed)}/{len(want)} expected cells pass')
    if extra:
        print(f'{len(extra)} passing cells are not listed yet (add them to gate on them):')
        print('\n'.join('  ' + ' '.join(k) for k in extra[:40]))
        if len(extra) > 40:
            print(f'  ... and {len(extra) - 40} more (matrix.py RESULTS --list-passing)')
    if failed:
        print(f'REGRESSION: {len(failed)} expected cells fail:')
        print('\n'.join(f"  {' '.join(k)}: {v[:200]}" for k, v in failed))
        return 1
    return 0


def main() -> int:
    rows = load(sys.argv[1])
    args = sys.argv[2:]
    if args[:1] == ['--expect'] and len(args) == 2:
        return gate(rows, args[1])
    if args == ['--list-passing']:
        for k, v in cells(rows).items():
            if v == 'ok':
                print(' '.join(k))
        return 0
    if args:
        sys.exit(__doc__)
    render(rows)
    return 0


if __name__ == '__main__':
    sys.exit(main())
