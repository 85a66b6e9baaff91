"""The bench's request bodies, written as OUT/NAME.json: message/send of
1 KiB and 64 KiB, tasks/get, message/stream of 512 bytes, a 1 KiB
message that the fleet's matcher places with the translate agent, and the
1 KiB send and 512-byte stream in A2A 1.0's shape (bench/bridge.sh), and
the 1 KiB send as an HTTP+JSON body (bench/rest.sh).
Used by bench/run.sh and bench/pgo.sh.

    python3 bench/bodies.py OUT
"""
import json
import sys

ECHO = "please echo this benchmark message back to me with every word intact "
TRANSLATE = ("Please translate this letter into French for our partners in Lyon. It explains the new "
             "product range, the prices for next year and how to reach our team. Keep the tone warm "
             "and formal, and translate the product names only where a French name already exists. ")


def sized(n, head, tail, words):
    """head + text + tail of exactly n bytes, the text repeating words."""
    fill = n - len(head) - len(tail)
    text = (words * (fill // len(words) + 1))[:fill - 1].rstrip() + "."
    body = head + text.ljust(fill, ".") + tail
    assert len(body) == n and json.loads(body)
    return body


def send(n, method="message/send", words=ECHO):
    """A JSON-RPC request of exactly n bytes whose one text part repeats words."""
    head = ('{"jsonrpc":"2.0","id":1,"method":"%s","params":{"message":{"kind":"message",'
            '"messageId":"bench-m1","role":"user","parts":[{"kind":"text","text":"' % method)
    return sized(n, head, '"}]}}}', words)


def send10(n, method="SendMessage"):
    """The same call in A2A 1.0's shape, n bytes (bench/bridge.sh)."""
    head = ('{"jsonrpc":"2.0","id":1,"method":"%s","params":{"message":{'
            '"messageId":"bench-m1","role":"ROLE_USER","parts":[{"text":"' % method)
    return sized(n, head, '"}]}}}', ECHO)


def rest10(n):
    """The 1.0 send's HTTP+JSON body (the params alone), n bytes (bench/rest.sh)."""
    head = '{"message":{"messageId":"bench-m1","role":"ROLE_USER","parts":[{"text":"'
    return sized(n, head, '"}]}}', ECHO)


def main(out):
    bodies = {
        "send1k": send(1024),
        "send64k": send(65536),
        "get": '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"bench-task-42"}}',
        "stream": send(512, "message/stream"),
        "fleet1k": send(1024, words=TRANSLATE),
        "send1k_v10": send10(1024),
        "stream_v10": send10(512, "SendStreamingMessage"),
        "send1k_rest": rest10(1024),
    }
    for name, body in bodies.items():
        with open(f"{out}/{name}.json", "w") as f:
            f.write(body)


if __name__ == "__main__":
    main(sys.argv[1])
