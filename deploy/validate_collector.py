"""Checks deploy/otel-collector/collector.yaml (run by deploy/validate.sh).

No collector binary is at hand in CI, so this checks what a collector would
refuse at start and what would lose the gateway's spans: every component a
pipeline names is defined in its section, a traces pipeline exists and
starts at an OTLP receiver, and that receiver listens where the gateway's
defaults send (gRPC 4317, HTTP 4318).
"""

import sys

import yaml

SECTIONS = ("receivers", "processors", "exporters")


def problems(config):
    found = []
    pipelines = (config.get("service") or {}).get("pipelines") or {}
    traces = pipelines.get("traces")
    if not traces:
        return ["service.pipelines.traces is missing"]
    for name, pipeline in pipelines.items():
        for section in SECTIONS:
            defined = config.get(section) or {}
            for component in pipeline.get(section, []):
                if component not in defined:
                    found.append(f"pipeline {name} names {section[:-1]} {component!r}, which is not defined")
        if not pipeline.get("receivers") or not pipeline.get("exporters"):
            found.append(f"pipeline {name} needs a receiver and an exporter")
    for extension in (config.get("service") or {}).get("extensions", []):
        if extension not in (config.get("extensions") or {}):
            found.append(f"extension {extension!r} is not defined")
    if "otlp" not in traces.get("receivers", []):
        found.append("the traces pipeline does not receive OTLP")
    protocols = ((config.get("receivers") or {}).get("otlp") or {}).get("protocols") or {}
    for protocol, port in (("grpc", 4317), ("http", 4318)):
        endpoint = (protocols.get(protocol) or {}).get("endpoint", "")
        if not endpoint.endswith(f":{port}"):
            found.append(f"the OTLP {protocol} receiver should listen on :{port}, not {endpoint!r}")
    return found


def main(paths):
    failed = False
    for path in paths:
        with open(path) as f:
            found = problems(yaml.safe_load(f))
        for problem in found:
            print(f"ERROR {path}: {problem}")
        if not found:
            print(f"collector config {path}: OK")
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
