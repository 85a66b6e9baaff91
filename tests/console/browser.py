#!/usr/bin/env python3
"""Drives the console (issue #68) in headless Chromium over the DevTools Protocol.

    python3 tests/console/browser.py --admin http://127.0.0.1:PORT --out DIR
        [--expect-agents a,b] [--hostile NAME] [--sign-in user:pass]
        [--try-credential SCHEME=VALUE] [--chromium PATH] [--timeout SECONDS]

It loads every view of http://ADMIN/console and checks what the page shows against
the admin JSON endpoints themselves, sends streaming messages from "Try it", checks
that hostile strings stay text (window.__xss stays undefined), that the page raised
no CSP violation and no JS exception, and saves a PNG of each view into DIR.

Prints PASS/FAIL per check and `console: N passed, M failed`. Exit 0 when all pass,
1 when a check fails, 2 when the run could not be set up.

Needs Debian's `chromium` and the `websockets` package, pinned below, which this
script installs into tests/console/.venv (made here when missing). Loopback only;
every wait is bounded.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv")
WEBSOCKETS_VERSION = "15.0.1"


def setup_fail(msg):
    print(f"SETUP FAIL: {msg}", flush=True)
    sys.exit(2)


def ensure_venv():
    """Re-runs this script with the venv's python, making the venv when needed."""
    if os.environ.get("A2A_CONSOLE_VENV") == "1":
        return
    py = os.path.join(VENV, "bin", "python")
    probe = ("import importlib.metadata as m, sys; "
             f"sys.exit(0 if m.version('websockets') == '{WEBSOCKETS_VERSION}' else 1)")

    def has_pin():
        if not os.path.exists(py):
            return False
        try:
            return subprocess.run([py, "-c", probe], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if not has_pin():
        if not os.path.exists(py):
            print(f"making {VENV} ...", flush=True)
            try:
                r = subprocess.run([sys.executable, "-m", "venv", VENV], capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                setup_fail("python3 -m venv timed out")
            if r.returncode != 0:
                setup_fail(f"python3 -m venv {VENV} failed (on Debian: apt-get install python3-venv): {r.stderr.strip()}")
        print(f"installing websockets=={WEBSOCKETS_VERSION} into {VENV} ...", flush=True)
        try:
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                f"websockets=={WEBSOCKETS_VERSION}"], capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            setup_fail("pip install websockets timed out")
        if r.returncode != 0 or not has_pin():
            setup_fail(f"pip install websockets=={WEBSOCKETS_VERSION} failed: {r.stderr.strip()[-800:]}")
    env = dict(os.environ, A2A_CONSOLE_VENV="1")
    os.execve(py, [py, os.path.abspath(__file__), *sys.argv[1:]], env)


if __name__ == "__main__":
    ensure_venv()

# ---- from here on, inside the venv ---------------------------------------------

import argparse  # noqa: E402
import asyncio  # noqa: E402
import base64  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

HOSTILE = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '"><svg onload=window.__xss=1>',
]

# Runs in every page before its own scripts (not subject to the page's CSP):
# records CSP violations the way the page itself sees them.
WATCH = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') +
    ' at ' + (e.sourceFile || '?') + ':' + e.lineNumber);
});
"""


class SetupError(Exception):
    pass


class CDPError(Exception):
    pass


# ---- results ------------------------------------------------------------------

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}" + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {detail}" if detail else ""), flush=True)
        return bool(ok)


# ---- the admin endpoints, read directly ---------------------------------------

class Admin:
    def __init__(self, base, timeout=10):
        self.base = base.rstrip("/")
        self.cookie = None
        self.timeout = timeout

    def request(self, method, path, body=None, headers=None):
        data = None
        hdrs = {"accept": "application/json"}
        hdrs.update(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["content-type"] = "application/json"
        if self.cookie:
            hdrs["cookie"] = self.cookie
        req = urllib.request.Request(self.base + path, data=data, headers=hdrs, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return res.status, dict(res.headers), res.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def get_json(self, path):
        status, _, raw = self.request("GET", path)
        if status != 200:
            raise SetupError(f"GET {path}: {status} {raw[:200]!r}")
        return json.loads(raw)

    def sign_in(self, user_pass):
        auth = "Basic " + base64.b64encode(user_pass.encode()).decode()
        status, headers, raw = self.request("POST", "/admin/session", {"headers": {"authorization": auth}})
        if status // 100 != 2:
            raise SetupError(f"POST /admin/session: {status} {raw[:200]!r}")
        for k, v in headers.items():
            if k.lower() == "set-cookie" and v.startswith("a2a_console="):
                self.cookie = v.split(";")[0]
        if not self.cookie:
            raise SetupError("POST /admin/session set no a2a_console cookie")


# ---- Chromium and the DevTools Protocol -----------------------------------------

def find_chromium(given):
    for c in [given, "chromium", "chromium-browser", "google-chrome"]:
        if c and shutil.which(c):
            return shutil.which(c)
    raise SetupError("no chromium: apt-get install -y chromium")


def launch_chromium(binary, profile, log_path, timeout=30):
    args = [
        binary, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
        "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--disable-features=Translate,MediaRouter,OptimizationHints", "--no-proxy-server",
        "--metrics-recording-only", "--mute-audio", "--hide-scrollbars", "--window-size=1440,900",
        "about:blank",
    ]
    log = open(log_path, "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"chromium exited with {proc.returncode} (see {log_path})")
        try:
            with open(port_file) as f:
                lines = f.read().split("\n")
            if len(lines) >= 2 and lines[0].strip().isdigit() and lines[1].strip():
                return proc, int(lines[0]), lines[1].strip()
        except OSError:
            pass
        time.sleep(0.1)
    stop_chromium(proc)
    raise SetupError(f"chromium wrote no DevToolsActivePort in {timeout} s (see {log_path})")


def stop_chromium(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class CDP:
    """One browser-level websocket; pages are flattened sessions on it."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending = {}
        self.listeners = []
        self.reader_task = None

    def start(self):
        self.reader_task = asyncio.create_task(self._read())

    async def _read(self):
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                if "id" in msg:
                    fut = self.pending.pop(msg["id"], None)
                    if fut and not fut.done():
                        fut.set_result(msg)
                else:
                    for fn in list(self.listeners):
                        fn(msg)
        except Exception as e:  # the socket closed: fail what waits
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(CDPError(f"devtools socket closed: {e}"))

    async def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        i = self.next_id
        msg = {"id": i, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        fut = asyncio.get_running_loop().create_future()
        self.pending[i] = fut
        await self.ws.send(json.dumps(msg))
        try:
            res = await asyncio.wait_for(fut, timeout)
        finally:
            self.pending.pop(i, None)
        if "error" in res:
            raise CDPError(f"{method}: {res['error'].get('message')} {res['error'].get('data', '')}".strip())
        return res.get("result", {})


class Page:
    def __init__(self, cdp, session):
        self.cdp = cdp
        self.session = session
        self.exceptions = []
        self.console_errors = []
        self.log_errors = []
        self.csp_logs = []
        self.network_401 = 0
        cdp.listeners.append(self._on_event)

    def _on_event(self, msg):
        if msg.get("sessionId") != self.session:
            return
        method = msg.get("method")
        p = msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            desc = (d.get("exception") or {}).get("description") or d.get("text")
            self.exceptions.append(f"{desc} at {d.get('url', '?')}:{d.get('lineNumber')}")
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.console_errors.append(f"console.{p.get('type')}: {args}")
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            textv = e.get("text", "")
            if "Content Security Policy" in textv or e.get("source") == "security":
                self.csp_logs.append(textv)
            elif e.get("level") == "error":
                if e.get("source") == "network" and "status of 401" in textv:
                    self.network_401 += 1
                else:
                    self.log_errors.append(f"[{e.get('source')}] {textv} {e.get('url', '')}".strip())

    async def send(self, method, params=None, timeout=30):
        return await self.cdp.send(method, params, self.session, timeout)

    async def eval(self, expression, timeout=30):
        res = await self.send("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True,
        }, timeout)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise CDPError(f"evaluate: {(d.get('exception') or {}).get('description') or d.get('text')}")
        return res.get("result", {}).get("value")

    async def wait_for(self, expression, timeout=10, interval=0.2):
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = await self.eval(expression)
            except CDPError:
                value = None
            if value:
                return value
            await asyncio.sleep(interval)
        return value

    async def screenshot(self, path):
        await self.eval("window.scrollTo(0, 0)")
        await asyncio.sleep(0.3)
        metrics = await self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        height = max(600, min(int(size.get("height", 900)), 6000))
        res = await self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": 1440, "height": height, "scale": 1},
        }, timeout=60)
        with open(path, "wb") as f:
            f.write(base64.b64decode(res["data"]))
        return path


# ---- page helpers -----------------------------------------------------------------

def js(v):
    return json.dumps(v)


async def set_value(page, selector, value, event="change"):
    ok = await page.eval(f"""(() => {{
      const el = document.querySelector({js(selector)});
      if (!el) return false;
      el.value = {js(value)};
      el.dispatchEvent(new Event({js(event)}, {{bubbles: true}}));
      return el.value === {js(value)};
    }})()""")
    if not ok:
        raise CDPError(f"could not set {selector} to {value!r}")


async def set_checked(page, selector, on):
    await page.eval(f"""(() => {{
      const el = document.querySelector({js(selector)});
      el.checked = {js(bool(on))};
      el.dispatchEvent(new Event('change', {{bubbles: true}}));
    }})()""")


async def click(page, selector):
    ok = await page.eval(f"""(() => {{
      const el = document.querySelector({js(selector)});
      if (!el) return false;
      el.click();
      return true;
    }})()""")
    if not ok:
        raise CDPError(f"no {selector} to click")


async def show_view(page, name, timeout=10):
    await page.eval(f"location.hash = {js('#' + name)}")
    return await page.wait_for(
        f"!document.querySelector('#view-{name}').hidden && document.querySelector('#signin').hidden", timeout)


async def texts(page, selector):
    return await page.eval(f"Array.from(document.querySelectorAll({js(selector)}), (e) => e.textContent)") or []


# ---- the run ------------------------------------------------------------------------

async def run(args, r, admin, ws_url):
    from websockets.asyncio.client import connect

    out = args.out
    wait = args.timeout
    async with connect(ws_url, max_size=None, ping_interval=None, open_timeout=15) as ws:
        cdp = CDP(ws)
        cdp.start()
        target = await cdp.send("Target.createTarget", {"url": "about:blank"})
        attached = await cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        page = Page(cdp, attached["sessionId"])
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            await page.send(m)
        await page.send("Emulation.setDeviceMetricsOverride",
                        {"width": 1440, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})

        base = args.admin.rstrip("/")
        await page.send("Page.navigate", {"url": base + "/console"})
        loaded = await page.wait_for(
            "document.readyState === 'complete' && (!document.querySelector('#signin').hidden"
            " || !document.querySelector('#view-fleet').hidden)", wait)
        if not r.check("console page loads and shows a view or the sign-in form", loaded):
            return

        async def section(name, coro):
            try:
                await coro
            except Exception as e:  # one broken step must not hide the others
                r.check(f"{name}: ran to the end", False, f"{type(e).__name__}: {e}")

        await section("sign-in", sign_in(page, args, r, out, wait))
        await section("fleet", fleet_view(page, args, r, admin, out, wait))
        await section("skills", skills_view(page, r, admin, out, wait))
        await section("try", try_view(page, args, r, admin, out, wait))
        await section("calls", calls_view(page, r, admin, out, wait))
        await section("limits", limits_view(page, r, admin, out, wait))
        if args.hostile:
            await section("hostile", hostile(page, args, r, admin, wait))
        await section("safety", safety(page, r))


async def sign_in(page, args, r, out, wait):
    shown = await page.eval("!document.querySelector('#signin').hidden")
    if not args.sign_in:
        r.check("no sign-in asked (the console has no [console] auth)", not shown,
                "the page asks to sign in: pass --sign-in user:pass" if shown else "")
        return
    r.check("sign-in form shown before a session", shown)
    if not shown:
        return
    alone = await page.eval("""Array.from(document.querySelectorAll('.view')).every((v) => v.hidden)
      && document.querySelector('#nav').hidden""")
    r.check("sign-in form shown alone (no view, no nav)", alone)
    await page.screenshot(os.path.join(out, "signin.png"))
    kind = await page.eval("""(() => {
      const sel = document.querySelector('#signin-scheme');
      const o = Array.from(sel.options).find((x) => x.dataset.kind === 'basic');
      if (!o) return null;
      sel.value = o.value;
      sel.dispatchEvent(new Event('change', {bubbles: true}));
      return o.dataset.kind;
    })()""")
    if not r.check("sign-in offers a user-and-password scheme", kind == "basic"):
        return
    user, _, password = args.sign_in.partition(":")
    # A wrong password first: refused, and the form says so.
    await set_value(page, "#signin-user", user, "input")
    await set_value(page, "#signin-password", password + "-wrong", "input")
    await click(page, "#signin-submit")
    refused = await page.wait_for("!document.querySelector('#signin-error').hidden", wait)
    r.check("a wrong password is refused with a message", refused)
    await set_value(page, "#signin-user", user, "input")
    await set_value(page, "#signin-password", password, "input")
    await click(page, "#signin-submit")
    ok = await page.wait_for("document.querySelector('#signin').hidden && !document.querySelector('#view-fleet').hidden"
                             " && document.querySelectorAll('#fleet-rows tr').length > 0", wait)
    r.check("sign-in opens a session and shows the fleet", ok)
    cleared = await page.eval("Array.from(document.querySelectorAll('#signin input')).every((i) => i.value === '')")
    r.check("sign-in fields are cleared after sending", cleared)


async def fleet_view(page, args, r, admin, out, wait):
    fleet = admin.get_json("/admin/fleet")
    agents = fleet.get("agents", [])
    names = [a["name"] for a in agents]
    if not await show_view(page, "fleet", wait):
        r.check("fleet view shown", False)
        return
    await page.wait_for(f"document.querySelectorAll('#fleet-rows tr[data-agent]').length >= {len(names)}", wait)
    shown = await texts(page, "#fleet-rows .agent-name")
    missing = [n for n in names if n not in shown]
    r.check(f"fleet view lists every agent of /admin/fleet ({len(names)})", not missing and names,
            f"missing {missing}" if missing else "")
    if args.expect_agents:
        want = [x for x in args.expect_agents.split(",") if x]
        r.check("expected agents are in /admin/fleet", all(w in names for w in want),
                f"/admin/fleet has {names}")
        r.check("expected agents are in the fleet view", all(w in shown for w in want), f"view has {shown}")
    # Each row shows its card state and each replica's breaker state as badges.
    bad = []
    for a in agents:
        badges = await page.eval(f"""(() => {{
          const row = Array.from(document.querySelectorAll('#fleet-rows tr')).find((t) => t.dataset.agent === {js(a['name'])});
          return row ? Array.from(row.querySelectorAll('.badge'), (b) => b.textContent) : null;
        }})()""")
        want = [(a.get("card") or {}).get("state")] + [rep.get("state") for rep in a.get("replicas", [])]
        if a.get("card_signature"):
            want.append(a["card_signature"].get("state"))
        if badges is None or any(w and w not in badges for w in want):
            bad.append(f"{a['name']}: want {want}, shown {badges}")
    r.check("fleet rows show card, signature and breaker states as badges", not bad, "; ".join(bad))
    r.check("fleet header shows the gateway status",
            await page.eval("document.querySelector('#gw-status').textContent") == str(fleet.get("status")))
    polled = await page.wait_for("Number(document.querySelector('#view-fleet').dataset.loads) >= 2", 8)
    r.check("fleet view refreshes by itself (~3 s)", polled)
    await page.screenshot(os.path.join(out, "fleet.png"))


async def skills_view(page, r, admin, out, wait):
    data = admin.get_json("/admin/skills")
    skills = data.get("skills", [])
    ids = [s["id"] for s in skills]
    if not await show_view(page, "skills", wait):
        r.check("skills view shown", False)
        return
    await page.wait_for(f"document.querySelectorAll('#skills-rows .skill-id').length >= {len(ids)}", wait)
    shown = await texts(page, "#skills-rows .skill-id")
    missing = [i for i in ids if i not in shown]
    r.check(f"skills view lists every skill of /admin/skills ({len(ids)})", not missing,
            f"missing {missing}" if missing else "")
    query = None
    for s in skills:
        if s.get("examples"):
            query = s["examples"][0]
            break
    if query is None:
        query = skills[0]["name"] if skills else "hello"
    expected = admin.get_json("/admin/skills/match?" + urllib.parse.urlencode({"text": query}))
    await set_value(page, "#match-text", query, "input")
    picked = expected.get("picked")
    if picked:
        got = await page.wait_for(
            f"(document.querySelector('#match-picked .picked-skill') || {{}}).textContent === {js(picked['skill'])}", wait)
        r.check(f"match box shows the picked skill for {query!r}", got, f"expected {picked['skill']}")
    else:
        got = await page.wait_for("document.querySelector('#match-picked').textContent.includes('No skill')", wait)
        r.check(f"match box says no skill for {query!r}", got)
    rows = await page.eval("document.querySelectorAll('#match-rows tr').length")
    r.check("match box shows every score", rows == len(expected.get("scores", [])),
            f"{rows} rows for {len(expected.get('scores', []))} scores")
    await page.screenshot(os.path.join(out, "skills.png"))


def credential_for(cfg, spec):
    """--try-credential SCHEME=VALUE -> (index in config auth, kind, value) or None."""
    if not spec:
        return None
    name, _, value = spec.partition("=")
    for i, s in enumerate(cfg.get("auth") or []):
        if s.get("scheme") == name:
            return i, value
    raise SetupError(f"--try-credential: no scheme {name!r} in /admin/config auth")


def try_skill(admin):
    """The first published skill whose agent streams, or None."""
    skills = admin.get_json("/admin/skills").get("skills", [])
    streaming = [s["id"] for s in skills if s.get("streaming")]
    return (streaming or [s["id"] for s in skills] or [None])[0]


async def try_view(page, args, r, admin, out, wait):
    cfg = admin.get_json("/admin/config")
    if not await show_view(page, "try", wait):
        r.check("try view shown", False)
        return
    await page.wait_for("document.querySelectorAll('#try-version option').length > 0", wait)
    offered = cfg.get("bindings") or []
    grpc = await page.eval("""(() => {
      const o = Array.from(document.querySelectorAll('#try-binding option')).find((x) => x.value.toUpperCase() === 'GRPC');
      return o ? (o.disabled ? 'disabled' : 'enabled') : 'absent';
    })()""")
    want = "enabled" if "GRPC" in offered else "disabled"
    r.check(f"gRPC binding is {want}, as /admin/config's bindings say", grpc == want or (want == "disabled" and grpc == "absent"), grpc)
    cred = credential_for(cfg, args.try_credential)
    versions = cfg.get("versions") or ["1.0", "0.3", "0.1"]
    # A fleet routes a message that names no skill by its words, or not
    # at all: the tried calls name a skill that streams (--try-skill).
    skill = args.try_skill or try_skill(admin)
    cases = [("1.0", "JSONRPC"), ("0.3", "JSONRPC")]
    if "HTTP+JSON" in offered:
        cases.append(("1.0", "HTTP+JSON"))
    if "GRPC" in offered:
        cases.append(("1.0", "GRPC"))
    for version, binding in cases:
        if version not in versions:
            r.check(f"try: version {version} offered by /admin/config", False, f"versions {versions}")
            continue
        label = f"{version} {binding}"
        await set_value(page, "#try-target", "")
        await set_value(page, "#try-version", version)
        await set_value(page, "#try-binding", binding)
        await set_value(page, "#try-skill", skill or "")
        await set_checked(page, "#try-stream", True)
        await set_value(page, "#try-text", f"hello from browser.py ({label})", "input")
        preview = json.loads(await page.eval("document.querySelector('#try-preview').textContent"))
        body = preview.get("body") or {}
        if binding == "GRPC":
            r.check(f"try {label}: request is gRPC params", preview.get("binding") == "grpc"
                    and preview.get("version") == version and preview.get("stream") is True
                    and isinstance((preview.get("params") or {}).get("message"), dict), json.dumps(preview)[:300])
        elif binding == "JSONRPC":
            want_method = {"1.0": "SendStreamingMessage", "0.3": "message/stream", "0.1": "tasks/sendSubscribe"}[version]
            r.check(f"try {label}: request is {want_method}", body.get("method") == want_method
                    and preview.get("path") == "/", json.dumps(preview)[:300])
        else:
            r.check(f"try {label}: request is POST /message:stream",
                    preview.get("path") == "/message:stream" and "message" in body, json.dumps(preview)[:300])
        if version == "1.0":
            r.check(f"try {label}: header a2a-version: 1.0", preview.get("headers", {}).get("a2a-version") == "1.0")
        if cred:
            idx, value = cred
            await set_value(page, "#try-cred-scheme", str(idx))
            kind = await page.eval(f"document.querySelector('#try-cred-scheme').options[{idx + 1}].dataset.kind")
            if kind == "basic":
                u, _, pw = value.partition(":")
                await set_value(page, "#try-cred-user", u, "input")
                await set_value(page, "#try-cred-password", pw, "input")
            elif kind == "bearer":
                await set_value(page, "#try-cred-token", value, "input")
            else:
                await set_value(page, "#try-cred-key", value, "input")
        await click(page, "#try-send")
        events = await page.wait_for("document.querySelectorAll('#try-transcript .event').length >= 2", wait)
        n = await page.eval("document.querySelectorAll('#try-transcript .event').length")
        r.check(f"try {label}: streaming answer shows events as they come", events, f"{n} events")
        ended = await page.wait_for("!document.querySelector('#try-send').disabled", wait)
        status = await page.eval("document.querySelector('#try-status').textContent")
        r.check(f"try {label}: answer ends with a final status", ended and "final" in (status or ""), status)
        r.check(f"try {label}: HTTP status 200", (status or "").startswith("200"), status)
        if binding == "GRPC":
            r.check(f"try {label}: gRPC status OK shown", "gRPC 0 OK" in (status or ""), status)
        if cred:
            cleared = await page.eval("Array.from(document.querySelectorAll('#try-cred-fields input')).every((i) => i.value === '')")
            r.check(f"try {label}: credential field cleared after the answer", cleared)
            await set_value(page, "#try-cred-scheme", "")
        await page.screenshot(os.path.join(out, f"try-{version}-{binding.replace('+', '').lower()}.png"))


async def calls_view(page, r, admin, out, wait):
    listed = admin.get_json("/admin/calls?limit=100")
    if not await show_view(page, "calls", wait):
        r.check("calls view shown", False)
        return
    has = await page.wait_for("document.querySelectorAll('#calls-rows tr').length > 0", wait)
    r.check("calls view lists calls", has, f"/admin/calls had {len(listed.get('calls', []))}")
    live = await page.wait_for("document.querySelector('#calls-live').textContent === 'live'", wait)
    r.check("calls view is live on /admin/calls/stream", live)
    before = await page.eval("document.querySelectorAll('#calls-rows tr').length")
    # Make one call through the gateway, so that the stream has something to show.
    headers = {"content-type": "application/json", "a2a-version": "1.0"}
    skill = try_skill(admin)
    if skill:
        headers["a2a-skill"] = skill
    req = {"method": "POST", "path": "/", "headers": headers,
           "body": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
               "message": {"messageId": "browser-py-live", "role": "ROLE_USER", "parts": [{"text": "live check"}]}}})}
    admin.request("POST", "/admin/try", req)
    grew = await page.wait_for(f"document.querySelectorAll('#calls-rows tr').length > {before}", wait)
    r.check("a new call appears live", grew)
    await page.screenshot(os.path.join(out, "calls.png"))
    # Filters: status class and agent.
    await set_value(page, "#calls-status", "2xx")
    await asyncio.sleep(1.5)
    statuses = await page.eval("Array.from(document.querySelectorAll('#calls-rows tr'), (t) => t.dataset.status)")
    r.check("status filter 2xx shows only 2xx calls", all(s.startswith("2") for s in statuses),
            f"{len(statuses)} rows: {sorted(set(statuses))}")
    await set_value(page, "#calls-status", "")
    known = {a["name"] for a in admin.get_json("/admin/fleet").get("agents", [])}
    agents = sorted({c.get("upstream") for c in listed.get("calls", []) if c.get("upstream") in known})
    if agents:
        pick = agents[0]
        await set_value(page, "#calls-agent", pick)
        await asyncio.sleep(1.5)
        ups = await page.eval("Array.from(document.querySelectorAll('#calls-rows tr'), (t) => t.dataset.upstream)")
        r.check(f"agent filter {pick!r} shows only its calls", ups and all(u == pick for u in ups),
                f"{len(ups)} rows: {sorted(set(ups))}")
        await set_value(page, "#calls-agent", "")


async def limits_view(page, r, admin, out, wait):
    limits = admin.get_json("/admin/limits")
    if not await show_view(page, "limits", wait):
        r.check("limits view shown", False)
        return
    await page.wait_for("Number(document.querySelector('#view-limits').dataset.loads) >= 1", wait)
    body = await page.eval("document.querySelector('#view-limits').textContent")
    conc = limits.get("concurrency") or {}
    want = []
    if isinstance(conc.get("max_streams"), (int, float)):
        want.append(f"{conc['max_streams']:,}")
    if isinstance(conc.get("max_streams_per_caller"), (int, float)):
        want.append(f"{conc['max_streams_per_caller']:,}")
    for c in (limits.get("rate_limits") or {}).get("configured") or []:
        want.append(str(c.get("limit")))
    missing = [w for w in want if w not in body]
    r.check("limits view shows the numbers of /admin/limits", want and not missing, f"missing {missing}")
    rows = await page.eval("document.querySelectorAll('#limits-inflight-rows tr').length")
    n = len(limits.get("in_flight") or [])
    r.check("limits view has a row per agent in flight", rows == n or (n == 0 and rows == 1), f"{rows} rows for {n}")
    polled = await page.wait_for("Number(document.querySelector('#view-limits').dataset.loads) >= 2", 8)
    r.check("limits view refreshes by itself (~3 s)", polled)
    await page.screenshot(os.path.join(out, "limits.png"))


async def hostile(page, args, r, admin, wait):
    fleet = admin.get_json("/admin/fleet")
    skills = admin.get_json("/admin/skills").get("skills", [])
    agent = next((a for a in fleet.get("agents", []) if a.get("name") == args.hostile), None)
    if not r.check(f"hostile agent {args.hostile!r} is in /admin/fleet", agent is not None):
        return
    await show_view(page, "fleet", wait)
    await page.wait_for(f"Array.from(document.querySelectorAll('#fleet-rows tr')).some((t) => t.dataset.agent === {js(args.hostile)})", wait)
    row = await page.eval(f"""(() => {{
      const t = Array.from(document.querySelectorAll('#fleet-rows tr')).find((x) => x.dataset.agent === {js(args.hostile)});
      return t ? t.textContent : '';
    }})()""") or ""
    card = agent.get("card") or {}
    for field in ("name", "description", "last_error"):
        if card.get(field):
            r.check(f"hostile card {field} shown as literal text", card[field] in row, repr(card[field])[:80])
    await show_view(page, "skills", wait)
    await page.wait_for("document.querySelectorAll('#skills-rows tr').length > 0", wait)
    skills_text = await page.eval("document.querySelector('#skills-rows').textContent") or ""
    theirs = [s for s in skills if s.get("owner") == args.hostile]
    for s in theirs:
        for field in ("name", "description"):
            if s.get(field):
                r.check(f"hostile skill {field} shown as literal text", s[field] in skills_text, repr(s[field])[:80])
        for t in s.get("tags") or []:
            r.check("hostile skill tag shown as literal text", t in skills_text, repr(t)[:80])
    every = row + skills_text
    for h in HOSTILE:
        r.check(f"hostile string {h!r} is text in the DOM", h in every)
    injected = await page.eval("document.querySelectorAll('main img, main svg, main script, main iframe').length")
    r.check("no element was made from hostile text", injected == 0, f"{injected} found")


async def safety(page, r):
    xss = await page.eval("typeof window.__xss")
    r.check("window.__xss is undefined after every view", xss == "undefined", xss)
    stored = await page.eval("[localStorage.length, sessionStorage.length, document.cookie]")
    r.check("the page stores nothing (no storage, no script-readable cookie)",
            stored == [0, 0, ""], str(stored))
    violations = await page.eval("window.__cspViolations || []") or []
    r.check("no CSP violation (securitypolicyviolation events)", not violations, "; ".join(violations)[:800])
    r.check("no CSP violation (console)", not page.csp_logs, "; ".join(page.csp_logs)[:800])
    r.check("no JS exception", not page.exceptions, "; ".join(page.exceptions)[:800])
    errors = page.console_errors + page.log_errors
    r.check("no console error", not errors,
            "; ".join(errors)[:800] if errors else
            (f"{page.network_401} answers 401 logged by the browser, as expected" if page.network_401 else ""))
    # The detector itself: an inline <style> must be refused and seen.
    n = len(violations)
    await page.eval("document.head.append(Object.assign(document.createElement('style'), {textContent: 'body{}'}))")
    seen = await page.wait_for(f"(window.__cspViolations || []).length > {n}", 5)
    r.check("CSP is enforced and the detector sees violations (inline <style> refused)", seen)


def main():
    ap = argparse.ArgumentParser(description="Drive the a2a-gateway console in headless Chromium.")
    ap.add_argument("--admin", required=True, help="the admin listener, e.g. http://127.0.0.1:9090")
    ap.add_argument("--out", required=True, help="folder for the screenshots")
    ap.add_argument("--expect-agents", help="comma-separated agent names that must be shown")
    ap.add_argument("--try-skill", help="the skill \"Try it\" names (default: the first that streams)")
    ap.add_argument("--hostile", help="name of an agent whose card and skills carry hostile markup")
    ap.add_argument("--sign-in", help="user:pass for the console's sign-in form")
    ap.add_argument("--try-credential", help="SCHEME=VALUE typed into Try it (basic: SCHEME=user:pass)")
    ap.add_argument("--chromium", help="the browser binary (default: chromium)")
    ap.add_argument("--timeout", type=float, default=15, help="seconds for each wait (default 15)")
    args = ap.parse_args()

    host = urllib.parse.urlsplit(args.admin).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        setup_fail("--admin must be a loopback address")
    os.makedirs(args.out, exist_ok=True)
    r = Results()
    admin = Admin(args.admin)
    profile = None
    proc = None
    try:
        try:
            status, headers, _ = admin.request("GET", "/console")
        except OSError as e:
            raise SetupError(f"cannot reach {args.admin}: {e}")
        if status != 200:
            raise SetupError(f"GET /console: {status}")
        if args.sign_in:
            admin.sign_in(args.sign_in)
        status, _, _ = admin.request("GET", "/admin/config")
        if status == 401:
            raise SetupError("/admin/ needs a console session: pass --sign-in user:pass")
        if status != 200:
            raise SetupError(f"GET /admin/config: {status}")
        csp = next((v for k, v in headers.items() if k.lower() == "content-security-policy"), "")
        norm = lambda s: " ".join(s.replace(" ;", ";").split())  # noqa: E731
        r.check("/console carries the CSP of docs/console.md", norm(csp) == norm(CSP), csp)
        for path, want in (("/console/console.js", "javascript"), ("/console/console.css", "text/css")):
            st, hd, _ = admin.request("GET", path)
            ctype = next((v for k, v in hd.items() if k.lower() == "content-type"), "")
            r.check(f"{path} served as {want}", st == 200 and want in ctype, f"{st} {ctype}")

        binary = find_chromium(args.chromium)
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        print(f"browser: {version}", flush=True)
        profile = tempfile.mkdtemp(prefix="console-chromium-")
        proc, port, path = launch_chromium(binary, profile, os.path.join(args.out, "chromium.log"))
        ws_url = f"ws://127.0.0.1:{port}{path}"
        try:
            asyncio.run(asyncio.wait_for(run(args, r, admin, ws_url), timeout=300))
        except asyncio.TimeoutError:
            r.check("the run ended within 300 s", False)
        except (OSError, CDPError) as e:
            raise SetupError(f"devtools: {e}")
    except SetupError as e:
        setup_fail(str(e))
    finally:
        if proc is not None:
            stop_chromium(proc)
        if profile:
            shutil.rmtree(profile, ignore_errors=True)
    print(f"screenshots in {args.out}")
    print(f"console: {r.passed} passed, {r.failed} failed")
    sys.exit(1 if r.failed else 0)


if __name__ == "__main__":
    main()
