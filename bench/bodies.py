"""The bench's request bodies, written as OUT/NAME.json: message/send of
1 KiB and 64 KiB, tasks/get, message/stream of 512 bytes, and a 1 KiB
message that the fleet's matcher places with the translate agent.
Used by bench/run.sh and bench/pgo.sh.

    python3 bench/bodies.py OUT
"""
import json
import sys

ECHO = "please echo this benchmark message back to me with every word intact "
TRANSLATE = ("Please translate this letter into French for our partners in Lyon. It explains the new "
             "product range, the prices for next year and how to reach our team. Keep the tone warm "
             "and formal, and translate the product names only where a French name already exists. ")


def send(n, method="message/send", words=ECHO):
    """A JSON-RPC request of exactly n bytes whose one text part repeats words."""
    head = ('{"jsonrpc":"2.0","id":1,"method":"%s","params":{"message":{"kind":"message",'
            '"messageId":"bench-m1","role":"user","parts":[{"kind":"text","text":"' % method)
    tail = '"}]}}}'
    fill = n - len(head) - len(tail)
    text = (words * (fill // len(words) + 1))[:fill - 1].rstrip() + "."
    body = head + text.ljust(fill, ".") + tail
    assert len(body) == n and json.loads(body)
    return body


def main(out):
    bodies = {
        "send1k": send(1024),
        "send64k": send(65536),
        "get": '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"bench-task-42"}}',
        "stream": send(512, "message/stream"),
        "fleet1k": send(1024, words=TRANSLATE),
    }
    for name, body in bodies.items():
        with open(f"{out}/{name}.json", "w") as f:
            f.write(body)


if __name__ == "__main__":
    main(sys.argv[1])
