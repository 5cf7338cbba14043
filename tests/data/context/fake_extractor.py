"""A stand-in for a user's LLM extractor: JSON request on stdin, JSON answer on stdout.

It records the request it got next to itself (in $FAKE_EXTRACTOR_LOG) so the
test can check what memex sent, and answers with one memory per user
message that mentions "KEEP", plus a summary that counts the messages.
"""

import json
import os
import sys

request = json.load(sys.stdin)
with open(os.environ["FAKE_EXTRACTOR_LOG"], "w", encoding="utf-8") as log:
    json.dump(request, log)
if os.environ.get("FAKE_EXTRACTOR_FAIL"):
    print("model unavailable", file=sys.stderr)
    sys.exit(3)
memories = [
    {"text": m["content"].replace("KEEP", "").strip(), "category": "decision", "confidence": 0.9}
    for m in request["messages"]
    if m["role"] == "user" and isinstance(m["content"], str) and "KEEP" in m["content"]
]
print(json.dumps({"memories": memories, "summary": f"{len(request['messages'])} messages discussed"}))
