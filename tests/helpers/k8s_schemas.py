"""The Kubernetes and dstack schemas launch artifacts are checked against (tests/data/schemas),
with a strict walk that names every field a schema does not know."""

from __future__ import annotations

import json

import jsonschema
import yaml
from paths import DATA

SCHEMAS = DATA / "schemas"


def strict(schema: dict, doc, path="") -> list[str]:
    """Fields the schema does not know (the API server would prune them silently)."""
    out: list[str] = []
    if not isinstance(doc, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(doc, list) and "items" in schema:
            for i, x in enumerate(doc):
                out += strict(schema["items"], x, f"{path}[{i}]")
        return out
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    for k, v in doc.items():
        if not path and k in ("apiVersion", "kind", "metadata"):
            continue  # every object has these; the API server never prunes them
        if props is not None and k in props:
            out += strict(props[k], v, f"{path}.{k}")
        elif isinstance(extra, dict):
            out += strict(extra, v, f"{path}.{k}")
        elif props is not None:
            out.append(f"{path}.{k}")
    return out


def pytorchjob_schema() -> dict:
    return yaml.safe_load((SCHEMAS / "training-operator_pytorchjobs_v1_excerpt.yaml").read_text())["openAPIV3Schema"]


def mpijob_schema() -> dict:
    crd = yaml.safe_load((SCHEMAS / "mpi-operator_crd.yaml").read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == "v2beta1")["schema"]["openAPIV3Schema"]


def check(schema: dict, doc: dict) -> None:
    jsonschema.validate(doc, schema)
    assert strict(schema, doc) == []


DSTACK_SCHEMA = {  # the fields of a dstack distributed task, from dstack's task reference
    "type": "object", "required": ["type", "commands", "nodes"],
    "properties": {
        "type": {"const": "task"}, "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]{1,40}$"},
        "nodes": {"type": "integer", "minimum": 1},
        "startup_order": {"enum": ["any", "master-first", "workers-first"]},
        "stop_criteria": {"enum": ["all-done", "master-done"]},
        "image": {"type": "string"}, "env": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*="}},
        "commands": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "resources": {"type": "object", "properties": {"gpu": {"type": ["string", "integer"]},
                                                       "shm_size": {"type": "string"}}},
    },
    "additionalProperties": False,
}


# -- the CronJob, from Kubernetes' published OpenAPI (batch/v1) --

OPENAPI = json.loads((SCHEMAS / "kubernetes_batch_v1_cronjob_excerpt.json").read_text())


CRONJOB = "io.k8s.api.batch.v1.CronJob"


def _resolve_openapi(schema: dict) -> dict:
    """Follow OpenAPI's ``allOf: [{$ref}]`` and ``$ref`` to the schema they name."""
    while True:
        if "$ref" in schema:
            schema = OPENAPI["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        elif "allOf" in schema and len(schema["allOf"]) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema


def strict_openapi(schema: dict, doc, path: str = "") -> list[str]:
    """Fields the transcribed schema does not know (the API server would prune or reject them)."""
    schema = _resolve_openapi(schema)
    if schema.get("x-clusterbench-elided"):
        return []
    if isinstance(doc, list):
        return [x for i, v in enumerate(doc) for x in strict_openapi(schema.get("items", {}), v, f"{path}[{i}]")]
    if not isinstance(doc, dict):
        return []
    out = []
    props, extra = schema.get("properties"), schema.get("additionalProperties")
    for k, v in doc.items():
        if props is not None and k in props:
            out += strict_openapi(props[k], v, f"{path}.{k}")
        elif isinstance(extra, dict):
            out += strict_openapi(extra, v, f"{path}.{k}")
        else:
            out.append(f"{path}.{k}")
    return out


def check_cronjob(doc: dict) -> None:
    schema = {"$ref": f"#/components/schemas/{CRONJOB}", **OPENAPI}
    jsonschema.validate(doc, schema)
    assert strict_openapi(OPENAPI["components"]["schemas"][CRONJOB], doc) == []
