#!/usr/bin/env python3
"""Validate rendered kustomize output for a2a-gateway (run by deploy/validate.sh).

    validate_manifests.py --extract-dir DIR [-k 1.30.0 -k 1.37.0] NAME=RENDERED.yaml ...

For each rendered overlay (NAME=FILE, the output of `kubectl kustomize`):

1. Schemas. Every object is validated strictly (unknown fields are errors)
   against the Kubernetes OpenAPI schemas shipped in kubernetes-validate, for
   each -k version. A kind with no Kubernetes schema is an ERROR, unless a
   schema for it is vendored in deploy/schemas/ (CRDs: the ServiceMonitor);
   kubernetes-validate itself would only warn, and a typo in a kind would pass.
2. Cross references: ConfigMaps and ServiceAccounts that pods use (as
   volumes or in env) exist in the output; every Service, PodDisruptionBudget
   and ServiceMonitor selects something; named ports exist; the HPA targets a
   Deployment that exists; a StatefulSet's serviceName is a Service that
   selects its pods. Secrets are not rendered (a TLS key or a password does
   not belong in git): they are listed as "must exist in the cluster".
3. The gateway container (image a2a-gateway): args, ports 8080/9090, probes
   GET /healthz and /readyz on the admin port, requests and limits, the
   non-root securityContext, the preStop sleep, and
   terminationGracePeriodSeconds > preStop + server.shutdown_grace read from
   the gateway.toml it mounts; [tls] paths lie on a mounted Secret, and
   --plaintext is not passed when TLS is configured. [rate_limits.store]:
   each url's host is a Service in the output with that port (CI runs
   `check --offline`, so nothing else would notice a typo before the
   cluster), password_env is set in the container's env, password_file lies
   on a mounted Secret (ca_file on a mounted Secret or ConfigMap), and
   expected_replicas lies within the HPA's minReplicas..maxReplicas (a note
   if it is not minReplicas, or not replicas when there is no HPA).

Every gateway.toml found in a ConfigMap is written to
DIR/NAME/<configmap>/<key> so that validate.sh can run `a2a-gateway check`
on exactly what would be deployed. Exit status 1 on any error.
"""

import argparse
import ipaddress
import json
import os
import re
import sys
import tomllib
import urllib.parse

import jsonschema
import referencing
import yaml
from kubernetes_validate import utils as kv

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "schemas")

CONFIG_PATH = "/etc/a2a-gateway/gateway.toml"
NONROOT_UID = 65532
PROXY_PORT, ADMIN_PORT = 8080, 9090
STORE_PORT = 6379  # the port of a redis:// or rediss:// URL that names none
DEFAULT_SHUTDOWN_GRACE = 30.0  # seconds, config/gateway.toml's default


class Report:
    def __init__(self):
        self.errors = 0

    def error(self, where, msg):
        self.errors += 1
        print(f"ERROR {where}: {msg}")

    def info(self, where, msg):
        print(f"  ok  {where}: {msg}")

    def note(self, where, msg):
        print(f"NOTE  {where}: {msg}")


def kn(obj):
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def parse_duration(text):
    """humantime-style durations as the gateway accepts them ("30s", "1m30s", "500ms")."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)\s*(ms|s|m|h|d)", text)
    if not parts or re.sub(r"\s|\d+\s*(ms|s|m|h|d)", "", text):
        raise ValueError(f"cannot read duration {text!r}")
    return sum(int(n) * units[u] for n, u in parts)


# ---------------------------------------------------------------- schemas


def k8s_definitions(version):
    schema_dir = f"v{version}-local-strict"
    return kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", version)


def vendored_schema(obj):
    api = obj.get("apiVersion", "")
    group, _, ver = api.rpartition("/")
    name = f"{obj.get('kind', '').lower()}-{group.split('.')[0]}-{ver}.json"
    path = os.path.join(SCHEMAS, name)
    return path if group and os.path.exists(path) else None


def validate_schema(obj, where, versions, report):
    vendored = vendored_schema(obj)
    for version in versions:
        if vendored:
            with open(vendored) as f:
                schema = json.load(f)
            defs = referencing.Resource.from_contents(k8s_definitions(version))
            registry = defs @ referencing.Registry()
            validator = jsonschema.Draft202012Validator(schema, registry=registry)
            problems = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
            for p in problems:
                path = ".".join(str(x) for x in p.path)
                report.error(where, f"{os.path.basename(vendored)} (vendored CRD schema): {path}: {p.message}")
            if not problems:
                report.info(where, f"valid against the vendored schema {os.path.basename(vendored)} (Kubernetes {version} metadata)")
            continue
        try:
            got = kv.validate(obj, version, strict=True)
            report.info(where, f"valid against Kubernetes {got} (strict)")
        except kv.ValidationError as e:
            path = ".".join(str(x) for x in e.path)
            report.error(where, f"Kubernetes {e.version} schema: {path}: {e.message}")
        except kv.SchemaNotFoundError:
            report.error(
                where,
                f"no schema for {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {version}: "
                "a misspelt kind or apiVersion, or a CRD without a schema in deploy/schemas/",
            )


# ---------------------------------------------------------- cross checks


def selects(selector, labels):
    """A LabelSelector matches these labels. An empty selector counts as no
    match here: every selector in deploy/ should name its pods."""
    match = (selector or {}).get("matchLabels") or {}
    exprs = (selector or {}).get("matchExpressions") or []
    if not match and not exprs:
        return False
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in exprs:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(op, False)
        if not ok:
            return False
    return True


def pod_templates(objs):
    for o in objs:
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            yield o, o["spec"]["template"]
        elif o["kind"] == "Pod":
            yield o, o


def container_port_names(template):
    return {
        p.get("name"): p["containerPort"]
        for c in template["spec"].get("containers", [])
        for p in c.get("ports", []) or []
    }


def cross_check(name, objs, report):
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    pods = list(pod_templates(objs))

    for owner, tpl in pods:
        where = f"{name} {kn(owner)}"
        spec = tpl["spec"]
        sa = spec.get("serviceAccountName")
        if sa and sa not in by_kind.get("ServiceAccount", {}):
            report.error(where, f"serviceAccountName {sa!r} is not in the output")
        for v in spec.get("volumes", []) or []:
            if "configMap" in v and v["configMap"]["name"] not in by_kind.get("ConfigMap", {}):
                report.error(where, f"volume {v['name']!r}: ConfigMap {v['configMap']['name']!r} is not in the output")
            if "secret" in v:
                s = v["secret"]["secretName"]
                if s not in by_kind.get("Secret", {}):
                    report.note(where, f"volume {v['name']!r}: Secret {s!r} is not rendered and must exist in the cluster")
        tgps = spec.get("terminationGracePeriodSeconds", 30)
        for c in spec.get("containers", []):
            pre_stop = ((c.get("lifecycle") or {}).get("preStop") or {})
            sleep = (pre_stop.get("sleep") or {}).get("seconds", 0)
            if sleep >= tgps:
                report.error(where, f"container {c['name']!r}: preStop sleep {sleep}s is not shorter than terminationGracePeriodSeconds {tgps}")
        if owner["kind"] != "Pod":
            sel = owner["spec"].get("selector")
            if not selects(sel, tpl["metadata"].get("labels", {})):
                report.error(where, "spec.selector does not match the pod template's labels")
    env_refs_check(name, by_kind, pods, report)
    statefulset_check(name, by_kind, report)

    for svc in by_kind.get("Service", {}).values():
        where = f"{name} {kn(svc)}"
        sel = svc["spec"].get("selector")
        targets = [tpl for _, tpl in pods if sel and all(tpl["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
        if not targets:
            report.error(where, f"selector {sel} matches no pod template")
            continue
        for port in svc["spec"].get("ports", []):
            tp = port.get("targetPort", port["port"])
            for tpl in targets:
                names = container_port_names(tpl)
                if isinstance(tp, str) and tp not in names:
                    report.error(where, f"port {port.get('name')!r}: targetPort {tp!r} is not a named container port")
                if isinstance(tp, int) and tp not in names.values():
                    report.error(where, f"port {port.get('name')!r}: targetPort {tp} is not a container port")

    for pdb in by_kind.get("PodDisruptionBudget", {}).values():
        if not any(selects(pdb["spec"].get("selector"), tpl["metadata"].get("labels", {})) for _, tpl in pods):
            report.error(f"{name} {kn(pdb)}", "selector matches no pod template")

    for hpa in by_kind.get("HorizontalPodAutoscaler", {}).values():
        ref = hpa["spec"]["scaleTargetRef"]
        if ref["name"] not in by_kind.get(ref["kind"], {}):
            report.error(f"{name} {kn(hpa)}", f"scaleTargetRef {ref['kind']}/{ref['name']} is not in the output")
        target = by_kind.get(ref["kind"], {}).get(ref["name"])
        if target and hpa["spec"].get("metrics"):
            for c in target["spec"]["template"]["spec"]["containers"]:
                for m in hpa["spec"]["metrics"]:
                    if m.get("type") == "Resource":
                        res = m["resource"]["name"]
                        if res not in (c.get("resources", {}).get("requests") or {}):
                            report.error(f"{name} {kn(hpa)}", f"scales on {res} utilization but container {c['name']!r} requests no {res}")
        if hpa["spec"].get("minReplicas", 1) < 2:
            report.note(f"{name} {kn(hpa)}", "minReplicas < 2")

    for sm in by_kind.get("ServiceMonitor", {}).values():
        where = f"{name} {kn(sm)}"
        svcs = [s for s in by_kind.get("Service", {}).values() if selects(sm["spec"]["selector"], s["metadata"].get("labels", {}))]
        if not svcs:
            report.error(where, "selector matches no Service in the output")
        for ep in sm["spec"]["endpoints"]:
            for s in svcs:
                if ep.get("port") and ep["port"] not in [p.get("name") for p in s["spec"]["ports"]]:
                    report.error(where, f"endpoint port {ep['port']!r} is not a port name of {kn(s)}")
                for p in s["spec"]["ports"]:
                    if p.get("name") == ep.get("port") and p.get("targetPort") not in ("admin", ADMIN_PORT):
                        report.error(where, f"endpoint port {ep['port']!r} of {kn(s)} is not the gateway's admin port")
            if ep.get("path", "/metrics") != "/metrics":
                report.error(where, f"the gateway serves metrics at /metrics, not {ep.get('path')!r}")


def env_sources(container):
    """(what, kind, name, key, optional) for each Secret or ConfigMap that a
    container's environment reads; key is None for a whole envFrom."""
    for e in container.get("env") or []:
        vf = e.get("valueFrom") or {}
        for field, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
            if field in vf:
                ref = vf[field]
                yield f"env {e['name']}", kind, ref["name"], ref["key"], ref.get("optional", False)
    for i, src in enumerate(container.get("envFrom") or []):
        for field, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
            if field in src:
                ref = src[field]
                yield f"envFrom[{i}]", kind, ref["name"], None, ref.get("optional", False)


def env_refs_check(name, by_kind, pods, report):
    """A ConfigMap read into env must be rendered: kubelet would otherwise
    keep the container from starting. A Secret is the operator's (a
    password does not belong in git), like a mounted one."""
    for owner, tpl in pods:
        where = f"{name} {kn(owner)}"
        spec = tpl["spec"]
        for c in (spec.get("initContainers") or []) + spec.get("containers", []):
            for what, kind, ref, key, optional in env_sources(c):
                said = f"container {c['name']!r} {what}: {kind} {ref!r}" + (f" (key {key!r})" if key else "")
                obj = by_kind.get(kind, {}).get(ref)
                if obj is None and kind == "Secret":
                    must = "may exist" if optional else "must exist"
                    report.note(where, f"{said} is not rendered and {must} in the cluster")
                elif obj is None and not optional:
                    report.error(where, f"{said} is not in the output")
                elif obj is not None and key and not optional:
                    keys = set(obj.get("data") or {}) | set(obj.get("binaryData") or {}) | set(obj.get("stringData") or {})
                    if key not in keys:
                        report.error(where, f"{said}: no such key in the {kind}")


def statefulset_check(name, by_kind, report):
    """A StatefulSet's serviceName must be a Service of the output that
    selects its pods: Kubernetes accepts a missing one without a word, and
    the pods then get no DNS names."""
    for sts in by_kind.get("StatefulSet", {}).values():
        where = f"{name} {kn(sts)}"
        svc_name = sts["spec"].get("serviceName")
        if not svc_name:
            continue
        svc = by_kind.get("Service", {}).get(svc_name)
        labels = sts["spec"]["template"]["metadata"].get("labels", {})
        if svc is None:
            report.error(where, f"serviceName {svc_name!r} is not a Service in the output")
        elif not selects({"matchLabels": svc["spec"].get("selector")}, labels):
            report.error(where, f"serviceName {svc_name!r}: that Service does not select this StatefulSet's pods")


# ------------------------------------------------------ gateway container


def is_gateway(container):
    last = container.get("image", "").split("@")[0].split("/")[-1]
    return last.split(":")[0] == "a2a-gateway"


def effective(container, pod_spec, key):
    c = (container.get("securityContext") or {}).get(key)
    return c if c is not None else (pod_spec.get("securityContext") or {}).get(key)


def check_probe(probe, path, where, what, report):
    get = (probe or {}).get("httpGet")
    if not get:
        report.error(where, f"{what}: needs an httpGet probe on {path}")
        return
    if get.get("path") != path:
        report.error(where, f"{what}: path is {get.get('path')!r}, expected {path!r}")
    if get.get("port") not in ("admin", ADMIN_PORT):
        report.error(where, f"{what}: port is {get.get('port')!r}, expected the admin port (admin/{ADMIN_PORT})")
    if get.get("scheme", "HTTP") != "HTTP":
        report.error(where, f"{what}: the admin listener is plain HTTP")


def gateway_checks(name, objs, extract_dir, report):
    configmaps = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
    found = 0
    for owner, tpl in pod_templates(objs):
        spec = tpl["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", []) or []}
        for c in spec.get("containers", []):
            if not is_gateway(c):
                continue
            found += 1
            where = f"{name} {kn(owner)} container {c['name']!r}"
            args = c.get("args") or []
            if c.get("command"):
                report.error(where, "must not override the image's entrypoint (command)")
            if args[:3] != ["run", "--config", CONFIG_PATH]:
                report.error(where, f"args must start with run --config {CONFIG_PATH}, not {args}")
            ports = {p["containerPort"]: p.get("name") for p in c.get("ports", []) or []}
            if ports.get(PROXY_PORT) != "proxy" or ports.get(ADMIN_PORT) != "admin":
                report.error(where, f"needs ports proxy={PROXY_PORT} and admin={ADMIN_PORT}, has {ports}")
            check_probe(c.get("livenessProbe"), "/healthz", where, "livenessProbe", report)
            check_probe(c.get("readinessProbe"), "/readyz?verbose=false", where, "readinessProbe", report)
            res = c.get("resources") or {}
            for kind in ("requests", "limits"):
                for r in ("cpu", "memory"):
                    if r not in (res.get(kind) or {}):
                        report.error(where, f"resources.{kind}.{r} is not set")
            if effective(c, spec, "runAsNonRoot") is not True:
                report.error(where, "securityContext.runAsNonRoot must be true")
            if effective(c, spec, "runAsUser") != NONROOT_UID:
                report.error(where, f"securityContext.runAsUser must be {NONROOT_UID} (distroless nonroot)")
            sc = c.get("securityContext") or {}
            if sc.get("readOnlyRootFilesystem") is not True:
                report.error(where, "securityContext.readOnlyRootFilesystem must be true")
            if sc.get("allowPrivilegeEscalation") is not False:
                report.error(where, "securityContext.allowPrivilegeEscalation must be false")
            if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
                report.error(where, "securityContext.capabilities.drop must contain ALL")
            if (effective(c, spec, "seccompProfile") or {}).get("type") != "RuntimeDefault":
                report.error(where, "securityContext.seccompProfile.type must be RuntimeDefault")
            pre_stop = ((c.get("lifecycle") or {}).get("preStop") or {})
            if "exec" in pre_stop:
                report.error(where, "preStop exec cannot work: the image is distroless (no shell, no sleep); use preStop.sleep")
            sleep = (pre_stop.get("sleep") or {}).get("seconds")
            if sleep is None:
                report.error(where, "needs lifecycle.preStop.sleep.seconds (time for endpoints to be removed)")
                sleep = 0

            mounts = {m["mountPath"]: m for m in c.get("volumeMounts", []) or []}
            m = mounts.get(CONFIG_PATH)
            config = None
            if not m:
                report.error(where, f"nothing is mounted at {CONFIG_PATH}")
            else:
                vol = volumes.get(m["name"], {})
                cm = configmaps.get((vol.get("configMap") or {}).get("name"))
                key = m.get("subPath", "gateway.toml")
                if not cm or key not in (cm.get("data") or {}):
                    report.error(where, f"{CONFIG_PATH} is not a key of a rendered ConfigMap")
                else:
                    text = cm["data"][key]
                    out = os.path.join(extract_dir, name, cm["metadata"]["name"], key)
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    with open(out, "w") as f:
                        f.write(text)
                    try:
                        config = tomllib.loads(text)
                    except tomllib.TOMLDecodeError as e:
                        report.error(where, f"{cm['metadata']['name']}/{key} is not TOML: {e}")
            if config is None:
                continue

            server = config.get("server", {})
            for field, port in (("listen", PROXY_PORT), ("admin_listen", ADMIN_PORT)):
                want = f"0.0.0.0:{port}"
                if server.get(field) not in (want, f"[::]:{port}"):
                    report.error(where, f"gateway.toml server.{field} is {server.get(field)!r}, expected {want!r} (the container port, on every interface)")
            grace = parse_duration(server.get("shutdown_grace", "30s"))
            tgps = spec.get("terminationGracePeriodSeconds", 30)
            if not tgps > sleep + grace:
                report.error(where, f"terminationGracePeriodSeconds {tgps} must exceed preStop sleep {sleep}s + server.shutdown_grace {grace:g}s")
            else:
                report.info(where, f"terminationGracePeriodSeconds {tgps} > preStop {sleep}s + shutdown_grace {grace:g}s")
            tls = config.get("tls")
            if tls:
                if "--plaintext" in args:
                    report.error(where, "--plaintext together with [tls]")
                for field in ("cert", "key", "client_ca"):
                    path = tls.get(field)
                    if not path:
                        continue
                    mount = [m for mp, m in mounts.items() if path.startswith(mp.rstrip("/") + "/")]
                    if not mount or "secret" not in volumes.get(mount[0]["name"], {}):
                        report.error(where, f"[tls] {field} {path!r} is not on a mounted Secret")
                    elif mount[0].get("subPath"):
                        report.error(where, f"[tls] {field}: a subPath mount never sees a renewed certificate")
                report.info(where, "terminates TLS from a mounted Secret")
            elif not (server.get("plaintext") or "--plaintext" in args):
                report.error(where, "plain HTTP on 0.0.0.0 needs server.plaintext = true or --plaintext (or configure [tls])")
            store = (config.get("rate_limits") or {}).get("store")
            if store:
                store_checks(where, objs, owner, c, volumes, store, report)
    if not found:
        report.error(name, "no a2a-gateway container in the output")


# ------------------------------------------------- [rate_limits.store]


def service_host(host):
    """The Service name a cluster-local host names, with its namespace (None
    for the pod's own): `name`, `name.ns.svc` or `name.ns.svc.cluster.local`.
    None for any other host (outside the cluster, or an address)."""
    labels = host.rstrip(".").split(".")
    if len(labels) == 1:
        return labels[0], None
    if labels[2:] in (["svc"], ["svc", "cluster", "local"]):
        return labels[0], labels[1]
    return None


def store_url_check(where, field, url, services, report):
    """The store's host is a Service of the output, with the URL's port.
    CI runs `check --offline`: a wrong host would otherwise surface only
    as the gateways falling back to on_store_error in the cluster."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port or STORE_PORT
    except ValueError as e:
        report.error(where, f"[rate_limits.store] {field}: cannot read {url!r}: {e}")
        return
    if parts.scheme not in ("redis", "rediss") or not host:
        report.error(where, f"[rate_limits.store] {field}: expected redis://host:port or rediss://host:port")
        return
    try:
        ipaddress.ip_address(host)
        report.note(where, f"[rate_limits.store] {field}: {host} is an address, not a Service: not checked")
        return
    except ValueError:
        pass
    named = service_host(host)
    if named is None:
        report.note(where, f"[rate_limits.store] {field}: {host} is outside the cluster: not checked")
        return
    svc_name, namespace = named
    svc = services.get(svc_name)
    if svc is None and namespace:
        report.note(where, f"[rate_limits.store] {field}: Service {svc_name!r} in namespace {namespace} is not rendered and must exist in the cluster")
        return
    if svc is None:
        report.error(where, f"[rate_limits.store] {field}: {host} is not a Service in the output")
        return
    ports = [p["port"] for p in svc["spec"].get("ports", [])]
    if port not in ports:
        report.error(where, f"[rate_limits.store] {field}: {kn(svc)} has no port {port} (has {ports})")
    else:
        report.info(where, f"[rate_limits.store] {field}: {kn(svc)} port {port}")


def store_secret_checks(where, container, volumes, store, report):
    """The password reaches the pod: password_env is in the container's env
    (else the gateway refuses to start), and password_file lies on a
    mounted Secret (nothing else in the pod should hold a password). The
    CA is not secret: ca_file may also lie on a mounted ConfigMap."""
    var = store.get("password_env")
    env = {e["name"] for e in container.get("env") or []}
    if var and var not in env:
        if container.get("envFrom"):
            report.note(where, f"[rate_limits.store] password_env {var}: not in env; it must come from envFrom")
        else:
            report.error(where, f"[rate_limits.store] password_env {var} is not set in the container's env")
    mounts = container.get("volumeMounts", []) or []
    for field, sources in (("password_file", ("secret",)), ("ca_file", ("secret", "configMap"))):
        path = store.get(field)
        if not path:
            continue
        mount = [m for m in mounts if path.startswith(m["mountPath"].rstrip("/") + "/")]
        if not mount or not any(s in volumes.get(mount[0]["name"], {}) for s in sources):
            what = " or ".join({"secret": "Secret", "configMap": "ConfigMap"}[s] for s in sources)
            report.error(where, f"[rate_limits.store] {field} {path!r} is not on a mounted {what}")


def store_replicas_check(where, objs, owner, store, report):
    """expected_replicas is the count each replica divides every limit by
    while the store is down. Below the HPA's minReplicas the fleet then
    always allows more than the limit; above maxReplicas it can never
    allow the limit at all."""
    expected = store.get("expected_replicas", 1)
    ref = (owner["kind"], owner["metadata"]["name"])
    hpas = [o for o in objs if o["kind"] == "HorizontalPodAutoscaler"
            and (o["spec"]["scaleTargetRef"]["kind"], o["spec"]["scaleTargetRef"]["name"]) == ref]
    if hpas:
        lo, hi = hpas[0]["spec"].get("minReplicas", 1), hpas[0]["spec"]["maxReplicas"]
        if not lo <= expected <= hi:
            report.error(where, f"[rate_limits.store] expected_replicas {expected} is outside {kn(hpas[0])}'s {lo}..{hi}")
        elif expected != lo:
            report.note(where, f"[rate_limits.store] expected_replicas {expected} is not {kn(hpas[0])}'s minReplicas {lo}")
        else:
            report.info(where, f"[rate_limits.store] expected_replicas {expected} = {kn(hpas[0])} minReplicas")
        return
    replicas = owner["spec"].get("replicas", 1) if owner["kind"] != "Pod" else 1
    if expected != replicas:
        report.note(where, f"[rate_limits.store] expected_replicas {expected} but {kn(owner)} runs {replicas}")


def store_checks(where, objs, owner, container, volumes, store, report):
    """[rate_limits.store] of the gateway.toml this container mounts."""
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    if store.get("urls"):
        for i, url in enumerate(store["urls"]):
            store_url_check(where, f"urls[{i}]", url, services, report)
    elif store.get("url"):
        store_url_check(where, "url", store["url"], services, report)
    store_secret_checks(where, container, volumes, store, report)
    store_replicas_check(where, objs, owner, store, report)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", "--kubernetes-version", action="append", dest="versions")
    ap.add_argument("--extract-dir", required=True)
    ap.add_argument("rendered", nargs="+", metavar="NAME=FILE")
    args = ap.parse_args()
    versions = args.versions or [kv.latest_version() + ".0"]
    report = Report()
    for item in args.rendered:
        name, _, path = item.partition("=")
        with open(path) as f:
            objs = [o for o in yaml.safe_load_all(f) if o]
        print(f"--- {name}: {len(objs)} objects ({', '.join(kn(o) for o in objs)})")
        for o in objs:
            validate_schema(o, f"{name} {kn(o)}", versions, report)
        cross_check(name, objs, report)
        gateway_checks(name, objs, args.extract_dir, report)
    if report.errors:
        print(f"{report.errors} error(s) in the rendered manifests")
        return 1
    print("rendered manifests: no errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
