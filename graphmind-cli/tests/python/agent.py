"""A small agent on the reference Python client (graphmind-ai 0.5.1), driven by the hub's
integration tests. It reports to $GRAPHMIND_URL and prints one JSON line per run:
{"run": <name>, "attached": bool, "result": <what add() returned>}.

Modes (argv[1]):
  once   one run "py-run" calling add(1, 2)
  twice  run "first", then print {"waiting": true}, read one line from stdin (the test
         restarts the hub meanwhile), reconnect with ready(), then run "second"
  loop   one run "py-loop" calling add(1, 2) three times in a row (the loop guard's
         third call holds unless GRAPHMIND_ON_LOOP=off); prints the list of results
"""
import json
import os
import sys

import graphmind as gm

gm.init(app="py-agent", url=os.environ["GRAPHMIND_URL"], retry_interval=30.0)


@gm.tool
def add(a: int, b: int) -> int:
    return a + b


def say(obj) -> None:
    print(json.dumps(obj, default=str), flush=True)


def one_run(name: str, attached: bool) -> None:
    with gm.run(name):
        result = add(1, 2)
    say({"run": name, "attached": attached, "result": result})


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "once"
    attached = gm.ready(5.0)
    if mode == "once":
        one_run("py-run", attached)
    elif mode == "loop":
        with gm.run("py-loop"):
            results = [add(1, 2) for _ in range(3)]
        say({"run": "py-loop", "attached": attached, "result": results})
    elif mode == "twice":
        one_run("first", attached)
        say({"waiting": True, "stats": gm.stats()})
        sys.stdin.readline()
        attached = gm.ready(5.0)
        one_run("second", attached)
        say({"stats": gm.stats()})
    gm.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
