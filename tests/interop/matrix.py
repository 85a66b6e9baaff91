"""Render out/results.jsonl (from run.sh) as markdown matrices."""
import json
import sys

OPS = ['send', 'stream', 'get', 'cancel', 'multiturn']
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
notes: list[str] = []
for mode in ('direct', 'gateway'):
    rs = [r for r in rows if r['mode'] == mode]
    agents = list(dict.fromkeys(r['agent'] for r in rs))
    clients = list(dict.fromkeys(r['client'] for r in rs))
    print(f'\n### {mode}\n')
    print('| client \\ agent | ' + ' | '.join(agents) + ' |')
    print('|---' * (len(agents) + 1) + '|')
    for c in clients:
        cells = []
        for a in agents:
            r = next(x for x in rs if x['client'] == c and x['agent'] == a)
            ops = r['r']['ops']
            ok = sum(ops.get(o) == 'ok' for o in OPS)
            bad = [o for o in OPS if ops.get(o) != 'ok']
            cell = f'{ok}/{len(OPS)}' + (f" ✗{','.join(bad)}" if bad else '')
            cu = r['r'].get('card_url', '')
            if mode == 'gateway' and cu and not cu.startswith(r['base']):
                cell += ' (card URL bypasses gateway!)'
            cells.append(cell)
            if bad:
                first = ops.get(bad[0]) or 'missing'
                notes.append(f'- {mode} {c}→{a} {bad[0]}: {first[:200]}')
        print(f'| {c} | ' + ' | '.join(cells) + ' |')
if notes:
    print('\nFirst error per failing cell:\n')
    print('\n'.join(notes))
