#!/usr/bin/env python3
"""Clients of moe-serve for tests/scripts/serve.sh (stdlib only; loopback; every wait bounded).

  serve_client.py equal PORT SRC REF_1BEST REF_NBEST NBEST_LINES   200 lines as 40 concurrent requests (and
                                                                   the first NBEST_LINES with n_best 3) must
                                                                   give moe-translate's output exactly (n-best
                                                                   scores to 1e-5: same_nbest_line)
  serve_client.py prefix PORT SRC REF PREFIXES REF_PREFIXED       8 requests with "prefix" (one per line, some
                                                                   empty) beside 8 without, all at once: each
                                                                   answer is moe-translate's (--prefix or not)
  serve_client.py same PORT ENDPOINT SRC REF OPTIONS N_BEST       SRC's lines in concurrent requests of 5 to
                                                                   ENDPOINT (/v1/translate, /v1/generate) with
                                                                   OPTIONS (a JSON object) and n_best N_BEST: the
                                                                   answers are REF, the program's own output
                                                                   (1-best lines, or n-best lines)
  serve_client.py load PORT SRC REF CLIENTS SECONDS [OUT.json [BEAM [DIFFER_OK [MAX_LEN_B]]]]   one-line
                                                                   requests at once; each checked against REF
                                                                   (DIFFER_OK 1: unlike ones counted, not failed);
                                                                   prints throughput, p50, p99
  serve_client.py compare PORT_B PORT_S SRC REF CLIENTS SECONDS ROUNDS OUT.json   load on two servers
                                                                   (batched, one at a time) in alternating slices
  serve_client.py bad PORT SRC REF                                 the bad-input list: each a 4xx with a JSON
                                                                   error naming its field, then a valid request
  serve_client.py overload PORT SRC REF                            a full queue gives 503 + Retry-After, a
                                                                   timeout 504, then /health answers
  serve_client.py disconnect PORT SRC REF                          clients that hang up mid-request beside
                                                                   clients that must be answered correctly; the
                                                                   hung-up requests' sentences are not decoded
  serve_client.py until-stopped PORT SRC REF CLIENTS OUT           load until the server goes away (SIGTERM);
                                                                   writes the number of answers received
"""
import concurrent.futures
import http.client
import json
import select
import socket
import sys
import threading
import time

TIMEOUT = 60


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def post(port, path, body):
    """POST a JSON body (dict or raw bytes) on a new connection; returns (status, parsed JSON or text, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        raw = r.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return r.status, payload, dict(r.getheaders())
    finally:
        conn.close()


def fail(msg):
    print("serve_client: FAIL: " + msg)
    sys.exit(1)


def translate(port, lines, **options):
    status, body, _ = post(port, "/v1/translate", dict(text=lines, **options))
    if status != 200:
        fail(f"translate answered {status}: {body}")
    return body["translations"]


def nbest_lines(index0, translations, n_best):
    """moe-translate's n-best lines ("index TAB score TAB text"; missing hypotheses as -inf)."""
    out = []
    for i, t in enumerate(translations):
        hyps = t.get("hypotheses", [])
        for h in range(n_best):
            if h < len(hyps):
                out.append(f"{index0 + i}\t{hyps[h]['score']:.6f}\t{hyps[h]['text']}")
            else:
                out.append(f"{index0 + i}\t{'0.000000' if not hyps and h == 0 else '-inf'}\t")
    return out


def same_nbest_line(got, want):
    """Index and text identical; scores within 1e-5: the float sums of a sentence's log-probs move in the
    6th decimal with the batch it is decoded in (moe-translate's own do with --max-tokens)."""
    g, w = got.split("\t"), want.split("\t")
    if len(g) != 3 or len(w) != 3 or g[0] != w[0] or g[2] != w[2]:
        return False
    return g[1] == w[1] or abs(float(g[1]) - float(w[1])) <= 1e-5


def cmd_equal(port, src, ref1, refn, n_lines):
    lines, ref1, refn = read_lines(src), read_lines(ref1), read_lines(refn)
    n_lines = int(n_lines)
    per = len(lines) // 40
    assert per * 40 == len(lines), "equal: give 40 x k lines"
    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        parts = list(pool.map(lambda k: translate(port, lines[k * per:(k + 1) * per]), range(40)))
    got = [t["text"] for p in parts for t in p]
    for i, (g, r) in enumerate(zip(got, ref1)):
        if g != r:
            fail(f"equal: line {i + 1}: server {g!r} but moe-translate {r!r}")
    if len(got) != len(ref1):
        fail(f"equal: {len(got)} translations for {len(ref1)} reference lines")
    chunks = [(k, lines[k:k + 5]) for k in range(0, n_lines, 5)]
    with concurrent.futures.ThreadPoolExecutor(len(chunks)) as pool:
        parts = list(pool.map(lambda c: nbest_lines(c[0], translate(port, c[1], n_best=3), 3), chunks))
    got = [l for p in parts for l in p]
    for i, (g, r) in enumerate(zip(got, refn)):
        if not same_nbest_line(g, r):
            fail(f"equal: n-best line {i + 1}: server {g!r} but moe-translate {r!r}")
    if len(got) != len(refn):
        fail(f"equal: {len(got)} n-best lines for {len(refn)} reference lines")
    print(f"serve_client: equal: {len(ref1)} lines in 40 concurrent requests and {len(refn)} n-best lines "
          f"({len(chunks)} concurrent requests) are moe-translate's output")


def text_line(t):
    """A 1-best answer as moe-translate writes it: the text, with its alignment links "text ||| s-t ..."."""
    if "alignment" not in t:
        return t["text"]
    return t["text"] + " ||| " + " ".join(f"{s}-{o}" for s, o in t["alignment"])


def cmd_same(port, endpoint, src, ref, options, n_best):
    lines, ref, options, n_best = read_lines(src), read_lines(ref), json.loads(options), int(n_best)
    key = "generations" if endpoint == "/v1/generate" else "translations"

    def one(k):
        status, body, _ = post(port, endpoint, dict(text=lines[k:k + 5], n_best=n_best, **options))
        if status != 200:
            fail(f"same: {endpoint} answered {status}: {body}")
        out = body[key]
        return [text_line(t) for t in out] if n_best == 1 else nbest_lines(k, out, n_best)

    starts = range(0, len(lines), 5)
    with concurrent.futures.ThreadPoolExecutor(len(starts)) as pool:
        got = [l for part in pool.map(one, starts) for l in part]
    for i, (g, r) in enumerate(zip(got, ref)):
        if not (g == r or (n_best > 1 and same_nbest_line(g, r))):
            fail(f"same: {endpoint} {options}: line {i + 1}: server {g!r} but the program {r!r}")
    if len(got) != len(ref):
        fail(f"same: {len(got)} lines for {len(ref)} reference lines")
    print(f"serve_client: same: {len(lines)} lines to {endpoint} with {options} in {len(starts)} concurrent requests "
          f"give the program's {len(ref)} output lines")


def cmd_prefix(port, src, ref, prefixes, ref_prefixed):
    lines, ref = read_lines(src), read_lines(ref)
    prefixes, ref_prefixed = read_lines(prefixes), read_lines(ref_prefixed)
    n = len(prefixes)
    assert n % 5 == 0 and len(ref_prefixed) == n, "prefix: give 5 x k prefixes and as many reference lines"
    starts = range(0, n, 5)
    jobs = [(k, True) for k in starts] + [(k, False) for k in starts]

    def one(job):
        k, prefixed = job
        options = {"prefix": prefixes[k:k + 5]} if prefixed else {}
        got = [t["text"] for t in translate(port, lines[k:k + 5], **options)]
        return [(k + i, prefixed, g) for i, g in enumerate(got) if g != (ref_prefixed if prefixed else ref)[k + i]]

    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        wrong = [w for ws in pool.map(one, jobs) for w in ws]
    if wrong:
        i, prefixed, g = wrong[0]
        want = (ref_prefixed if prefixed else ref)[i]
        fail(f"prefix: line {i + 1} ({'with' if prefixed else 'without'} its prefix) answered {g!r}, "
             f"moe-translate {want!r}")
    forced = sum(1 for p in prefixes if p)
    print(f"serve_client: prefix: {n} lines ({forced} with a prefix) in {len(starts)} requests beside the same lines "
          f"in {len(starts)} requests without prefixes, all at once: moe-translate's output (--prefix or not)")


def load(port, lines, ref, clients, seconds, stop_on_error=False, options=None, differ=None):
    """Each client sends one-line requests back to back (with `options`, e.g. {"beam": 1}), each on a new
    connection (a kept-alive one can be closed by the server's keep-alive limits just as the next request
    goes out), until `seconds` have passed, then finishes the request it is in; returns (answers,
    latencies, errors, seconds from the start to the last answer). An answer unlike `ref` is an error,
    unless `differ` is a list: then it counts as an answer and its line number is appended there (a GPU's
    GEMMs may round differently as the batch around a sentence changes)."""
    start = time.monotonic()
    deadline = start + seconds
    latencies, errors, answered = [], [], [0]
    lock = threading.Lock()

    def client(c):
        j = 0
        while time.monotonic() < deadline:
            i = (c * 37 + j * 11) % len(lines)
            j += 1
            t0 = time.monotonic()
            try:
                status, body, _ = post(port, "/v1/translate", {"text": [lines[i]], **(options or {})})
            except (OSError, http.client.HTTPException) as e:
                if stop_on_error:
                    return
                with lock:
                    errors.append(f"client {c}: {e!r}")
                return
            dt = time.monotonic() - t0
            with lock:
                if status != 200:
                    errors.append(f"client {c}: status {status}: {body}")
                    continue
                text = body["translations"][0]["text"]
                if text != ref[i]:
                    if differ is None:
                        errors.append(f"client {c}: line {i + 1} answered {text!r}, expected {ref[i]!r} "
                                      "(swapped or wrong)")
                        continue
                    differ.append(i + 1)
                answered[0] += 1
                latencies.append(dt)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 2 * TIMEOUT)
    return answered[0], sorted(latencies), errors, time.monotonic() - start


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def cmd_load(port, src, ref, clients, seconds, out=None, beam=None, differ_ok=None, max_len_b=None):
    """differ_ok "1": answers unlike moe-translate's are counted ("differ" in OUT), not failed; max_len_b: the
    requests' max_len_b, with max_len_a 0."""
    clients, seconds = int(clients), float(seconds)
    options = {"beam": int(beam)} if beam else {}
    if max_len_b:
        options.update(max_len_a=0, max_len_b=int(max_len_b))
    differ = [] if differ_ok == "1" else None
    answered, lat, errors, elapsed = load(port, read_lines(src), read_lines(ref), clients, seconds, options=options,
                                          differ=differ)
    if errors:
        fail(f"load: {len(errors)} errors, first: {errors[0]}")
    result = {"clients": clients, "seconds": elapsed, "requests": answered, "per_second": answered / elapsed,
              "p50_ms": 1e3 * percentile(lat, 50), "p99_ms": 1e3 * percentile(lat, 99), "differ": len(differ or [])}
    print(f"serve_client: load: {clients} clients, {elapsed:.1f} s: {answered} requests, "
          f"{result['per_second']:.1f}/s, p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, no errors"
          + (f", {len(differ)} unlike moe-translate's (lines {sorted(set(differ))[:5]}...)" if differ else ""))
    if out:
        with open(out, "w") as f:
            json.dump(result, f)


def cmd_compare(port_batched, port_single, src, ref, clients, seconds, rounds, out):
    """cmd_load against two servers in alternating slices (rounds x seconds / rounds each), so that a change
    of the machine's load falls on both alike; writes both results."""
    lines, ref = read_lines(src), read_lines(ref)
    clients, rounds, slice_s = int(clients), int(rounds), float(seconds) / int(rounds)
    totals = {}
    for _ in range(rounds):
        for name, port in (("batched", int(port_batched)), ("single", int(port_single))):
            answered, lat, errors, elapsed = load(port, lines, ref, clients, slice_s)
            if errors:
                fail(f"compare ({name}): {len(errors)} errors, first: {errors[0]}")
            t = totals.setdefault(name, {"requests": 0, "latencies": [], "seconds": 0.0})
            t["requests"] += answered
            t["latencies"] += lat
            t["seconds"] += elapsed
    result = {}
    for name, t in totals.items():
        lat = sorted(t["latencies"])
        result[name] = {"clients": clients, "seconds": t["seconds"], "requests": t["requests"],
                        "per_second": t["requests"] / t["seconds"], "p50_ms": 1e3 * percentile(lat, 50),
                        "p99_ms": 1e3 * percentile(lat, 99)}
        print(f"serve_client: compare: {name}: {clients} clients, {t['seconds']:.1f} s in {rounds} slices: "
              f"{t['requests']} requests, {result[name]['per_second']:.1f}/s, p50 {result[name]['p50_ms']:.0f} ms, "
              f"p99 {result[name]['p99_ms']:.0f} ms, no errors")
    with open(out, "w") as f:
        json.dump(result, f)


def raw_exchange(port, head, body=b"", slow=None):
    """Sends raw bytes (headers, then body; `slow` = (bytes per send, seconds between)); returns the status
    of the first response line and the body, or (None, reason) when the server closed without an answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    try:
        s.sendall(head)
        step, gap = slow or (len(body) or 1, 0)
        for k in range(0, len(body), step):
            # Stop sending once the server has answered (it answers 413 before reading a large body).
            if select.select([s], [], [], 0)[0]:
                break
            try:
                s.sendall(body[k:k + step])
            except OSError:
                break
            if gap:
                time.sleep(gap)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None, "closed without an answer"
            data += chunk
        head_part, rest = data.split(b"\r\n\r\n", 1)
        status = int(head_part.split(b" ")[1])
        length = 0
        for line in head_part.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, rest.decode("utf-8", "replace")
    finally:
        s.close()


def request_head(path, length, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(length).encode() + b"\r\nConnection: close\r\n" + extra + b"\r\n")


def cmd_bad(port, src, ref):
    lines, ref = read_lines(src), read_lines(ref)
    good = json.dumps({"text": [lines[0]]}).encode()
    big = b'{"text": ["' + b"a" * (10 << 20) + b'"]}'
    cases = [  # (name, field the error must name or None, raw exchange arguments)
        ("truncated body (shorter than its Content-Length)", None,
         dict(head=request_head(b"/v1/translate", len(good)), body=good[:len(good) // 2])),
        ("10 MB body", None, dict(head=request_head(b"/v1/translate", len(big)), body=big)),
        ("slow client (a byte every 4 s, past --read-timeout-s)", None,
         dict(head=request_head(b"/v1/translate", len(good)), body=good, slow=(1, 4.0))),
        ("invalid UTF-8", "text", dict(body=b'{"text": ["ein \xff\xfe Haus"]}')),
        ("unknown field", "colour", dict(body=b'{"text": ["a"], "colour": "blue"}')),
        ("n_best > beam", "n_best", dict(body=b'{"text": ["a"], "beam": 2, "n_best": 3}')),
        ("empty text", "text", dict(body=b'{"text": []}')),
        ("text not an array", "text", dict(body=b'{"text": "a house"}')),
        ("wrong type", "beam", dict(body=b'{"text": ["a"], "beam": "five"}')),
        ("malformed JSON", "body", dict(body=b'{"text": ["a"]')),
        ("not an object", "body", dict(body=b'[1, 2]')),
        ("too many lines", "text", dict(body=json.dumps({"text": ["a"] * 1000}).encode())),
        ("line too long", "text[0]", dict(body=json.dumps({"text": ["a" * 5000]}).encode())),
        ("unknown model", "model", dict(body=b'{"text": ["a"], "model": "nope"}')),
        ("score: tgt missing", "tgt", dict(body=b'{"src": ["a"]}', path=b"/v1/score")),
        ("no such endpoint", None, dict(body=b'{}', path=b"/v2/nothing")),
    ]
    for name, field, args in cases:
        path = args.pop("path", b"/v1/translate")
        if "head" not in args:
            args["head"] = request_head(path, len(args["body"]))
        status, body = raw_exchange(port, **args)
        if status is None or not 400 <= status < 500:
            fail(f"bad: {name}: expected a 4xx, got {status}: {body[:200]}")
        try:
            err = json.loads(body)["error"]
        except (ValueError, KeyError):
            fail(f"bad: {name}: the {status} answer is not a JSON error: {body[:200]}")
        if field is not None and err["field"] != field:
            fail(f"bad: {name}: the error names {err['field']!r}, not {field!r}: {err['message']}")
        print(f"serve_client: bad: {name}: {status} {err['field']}: {err['message'][:100]}")
        got = translate(port, [lines[0]])[0]["text"]
        if got != ref[0]:
            fail(f"bad: after {name}: a valid request answered {got!r}, expected {ref[0]!r}")
    print(f"serve_client: bad: {len(cases)} bad requests answered 4xx, each followed by a correct answer")


def metric(port, name):
    """The value of the sample `name` (with its labels) in /metrics, 0 when absent."""
    for line in get(port, "/metrics")[1].split("\n"):
        if line.startswith(name + " "):
            return float(line.split(" ")[1])
    return 0.0


def cmd_disconnect(port, src, ref):
    """While three 64-line jobs occupy the worker, 4 clients send a 40-line request and hang up, 4 others hang
    up mid-body, and 8 honest clients send 5 lines each: the honest ones get moe-translate's lines; the
    hung-up requests are counted 499 and their 160 queued sentences dropped, not decoded. The worker looks at
    each job's socket when it takes the job, and the handlers look every 25 ms: a hang-up is missed only if
    the client's FIN arrives after its job was taken, which cannot happen while the worker is still busy with the
    192 lines when every hung-up client has closed its socket (their jobs are taken after that). On a loaded
    machine (ctest runs tests side by side) the clients' threads can start late, after the worker went idle, and
    a request into an idle worker is taken within --max-wait-ms, so a round in which the 192 lines were done
    before the hang-ups were sent does not judge the server and is played again (at most 3 rounds). When the
    handlers count their 499s does not matter: with --cpu-threads 2 the worker's threads hold both cores while
    they decode, and a loaded machine once starved the handlers until the lines were done, in every round."""
    lines, ref = read_lines(src), read_lines(ref)
    body = json.dumps({"text": lines[:40]}).encode()
    names = ['moe_serve_requests_total{endpoint="translate",status="499"}', "moe_serve_dropped_sentences_total",
             "moe_serve_batch_sentences_sum"]

    def hang_up(k):
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        s.sendall(request_head(b"/v1/translate", len(body)))
        s.sendall(body if k % 2 else body[:len(body) // 3])  # whole request, or mid-body
        s.close()
        return []

    def honest(k):
        chunk = [(k * 5 + j) % len(lines) for j in range(5)]
        got = [t["text"] for t in translate(port, [lines[i] for i in chunk])]
        return [(i, g) for i, g in zip(chunk, got) if g != ref[i]]

    def blocker(k):
        chunk = list(range(k * 64, k * 64 + 64))
        got = [t["text"] for t in translate(port, [lines[i] for i in chunk])]
        return [(i, g) for i, g in zip(chunk, got) if g != ref[i]]

    for round_ in range(1, 4):
        before = [metric(port, n) for n in names]
        with concurrent.futures.ThreadPoolExecutor(18) as pool:
            blockers = [pool.submit(blocker, k) for k in range(3)]
            time.sleep(0.2)  # the worker is decoding them (--max-wait-ms 20), for a second or more
            hang_ups = [pool.submit(hang_up, k) for k in range(8)]
            concurrent.futures.wait(hang_ups)
            judged = not all(b.done() for b in blockers)  # every hung-up client left while the worker was busy
            jobs = blockers + hang_ups + [pool.submit(honest, k) for k in range(8)]
            wrong = [w for j in jobs for w in j.result()]
            deadline = time.monotonic() + TIMEOUT
            while metric(port, names[0]) - before[0] < 4:
                if time.monotonic() > deadline:
                    fail("disconnect: the 4 hung-up requests were never counted")
                time.sleep(0.02)
        if wrong:
            fail(f"disconnect: line {wrong[0][0] + 1} answered {wrong[0][1]!r}, expected {ref[wrong[0][0]]!r}")
        status, health, _ = get(port, "/health")
        if status != 200:
            fail(f"disconnect: /health answered {status} after the hang-ups")
        hung_up, dropped, decoded = (metric(port, n) - b for n, b in zip(names, before))
        if judged:
            break
        print(f"serve_client: disconnect: round {round_}: the worker finished the 192 lines before the clients hung "
              "up, so their requests may have been taken first: played again")
    else:
        fail("disconnect: in 3 rounds the worker was never still busy when the clients hung up")
    if (hung_up, dropped, decoded) != (4, 160, 192 + 40):
        fail(f"disconnect: {hung_up:.0f} requests counted 499 (want 4), {dropped:.0f} sentences dropped (want 160), "
             f"{decoded:.0f} decoded (want the 232 of the clients still there)")
    print("serve_client: disconnect: 8 clients hung up (4 mid-body, 4 after sending: 499, their 160 queued sentences "
          "dropped, not decoded); 8 others got correct answers")


def cmd_overload(port, src, ref):
    """16 concurrent one-line requests to a server with a 2-sentence queue and a 50 ms timeout: some must be
    refused with 503 and Retry-After, some time out with 504, any 200 must be right; then /health answers."""
    lines, ref = read_lines(src), read_lines(ref)

    def one(k):
        status, body, headers = post(port, "/v1/translate", {"text": [lines[k]]})
        if status == 200 and body["translations"][0]["text"] != ref[k]:
            fail(f"overload: line {k + 1} answered {body['translations'][0]['text']!r}, expected {ref[k]!r}")
        if status == 503 and headers.get("Retry-After") != "1":
            fail(f"overload: a 503 without Retry-After: {headers}")
        return status

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(one, range(16)))
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    if not set(counts) <= {200, 503, 504} or 503 not in counts or 504 not in counts:
        fail(f"overload: statuses {counts}; expected 503s (queue full) and 504s (timeout), nothing else but 200")
    if get(port, "/health")[0] != 200:
        fail("overload: /health does not answer afterwards")
    print(f"serve_client: overload: statuses {counts}: 503 with Retry-After when the queue is full, 504 past "
          f"the timeout")


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode(), dict(r.getheaders())
    finally:
        conn.close()


def cmd_until_stopped(port, src, ref, clients, out):
    answered, _, errors, _ = load(port, read_lines(src), read_lines(ref), int(clients), 120, stop_on_error=True)
    if errors:
        fail(f"until-stopped: {len(errors)} wrong answers, first: {errors[0]}")
    with open(out, "w") as f:
        f.write(f"{answered}\n")
    print(f"serve_client: until-stopped: {answered} answers, all correct")


if __name__ == "__main__":
    commands = {"equal": cmd_equal, "same": cmd_same, "prefix": cmd_prefix, "load": cmd_load, "compare": cmd_compare, "bad": cmd_bad, "overload": cmd_overload,
                "disconnect": cmd_disconnect,
                "until-stopped": cmd_until_stopped}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        print(__doc__)
        sys.exit(2)
    commands[sys.argv[1]](int(sys.argv[2]), *sys.argv[3:])
