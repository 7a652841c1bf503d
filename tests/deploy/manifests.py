"""What a schema cannot see in deploy/kubernetes: that the manifests name each other right.

    manifests.py check DIR           kustomization.yaml lists exactly the other YAML files, and
                                     the Deployment's names all resolve (Secret key, ConfigMap,
                                     PVC, --config path, overlay path, Service and PDB selectors)
    manifests.py extract DIR OUTDIR  writes the config file the Deployment's --config reads to
                                     OUTDIR/config.yaml and the Secret's token to OUTDIR/token

Run by run.sh with the venv's Python (PyYAML comes with kubernetes-validate). Exits 1 naming every
problem found.
"""

import os
import posixpath
import sys

import yaml

problems = []


def problem(msg):
    if msg not in problems:
        problems.append(msg)


def load(directory):
    """The kustomization and every resource document, as (file, doc) pairs."""
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    listed = kustomization.get("resources") or []
    present = sorted(
        n
        for n in os.listdir(directory)
        if n.endswith((".yaml", ".yml")) and n != "kustomization.yaml"
    )
    for name in sorted(set(present) - set(listed)):
        problem(f"{name} is not listed in kustomization.yaml resources")
    for name in sorted(set(listed) - set(present)):
        problem(f"kustomization.yaml lists {name}, which is not in {directory}")
    docs = []
    for name in present:
        with open(os.path.join(directory, name)) as f:
            docs += [(name, d) for d in yaml.safe_load_all(f) if d]
    return docs


def one(docs, kind, name=None):
    found = [d for _, d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]
    if len(found) != 1:
        problem(f"expected one {kind}{' ' + name if name else ''}, found {len(found)}")
        return None
    return found[0]


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def resolve(docs):
    """The Deployment's container, config file (ConfigMap, key) and token (Secret, key)."""
    deploy = one(docs, "Deployment")
    if deploy is None:
        return None
    pod = deploy["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    spec = pod["spec"]
    if not matches(deploy["spec"]["selector"].get("matchLabels"), labels):
        problem("the Deployment's selector does not match its pod labels")
    for kind in ("Service", "PodDisruptionBudget"):
        d = one(docs, kind)
        if d is not None:
            sel = d["spec"]["selector"] if kind == "Service" else d["spec"]["selector"].get("matchLabels")
            if not matches(sel, labels):
                problem(f"the {kind}'s selector does not match the pods")
    (container,) = spec["containers"]
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    svc = one(docs, "Service")
    if svc is not None:
        for p in svc["spec"]["ports"]:
            if p.get("targetPort") not in ports and p.get("targetPort") not in ports.values():
                problem(f"the Service's targetPort {p.get('targetPort')} is no container port")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    for m in mounts.values():
        v = volumes.get(m["name"])
        if v is None:
            problem(f"volumeMount {m['name']} names no volume")
        elif "configMap" in v:
            one(docs, "ConfigMap", v["configMap"]["name"])
        elif "persistentVolumeClaim" in v:
            one(docs, "PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"])

    def volume_at(path):
        """(mount, volume) holding path, the deepest mount first."""
        for mp in sorted(mounts, key=len, reverse=True):
            if path.startswith(mp.rstrip("/") + "/"):
                return mounts[mp], volumes.get(mounts[mp]["name"])
        return None, None

    args = container.get("args", [])
    config = None
    if "--config" not in args:
        problem("the container's args have no --config")
    else:
        path = args[args.index("--config") + 1]
        mount, vol = volume_at(path)
        if vol is None or "configMap" not in vol:
            problem(f"--config {path} is not inside a ConfigMap mount")
        else:
            key = posixpath.relpath(path, mount["mountPath"])
            cm = one(docs, "ConfigMap", vol["configMap"]["name"])
            if cm is not None and key not in cm.get("data", {}):
                problem(f"ConfigMap {vol['configMap']['name']} has no key {key} (--config {path})")
            elif cm is not None:
                config = cm["data"][key]

    env = {e["name"]: e for e in container.get("env", [])}
    token = None
    ref = env.get("SEREN_SCC_BEARER_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef")
    if ref is None:
        problem("SEREN_SCC_BEARER_TOKEN does not come from a Secret")
    else:
        secret = one(docs, "Secret", ref["name"])
        if secret is not None:
            data = secret.get("stringData", {})
            if ref["key"] not in data:
                problem(f"Secret {ref['name']} has no key {ref['key']}")
            else:
                token = data[ref["key"]]
    overlay = env.get("SEREN_SCC_RUNTIME_STORES", {}).get("value")
    if overlay is None:
        problem("SEREN_SCC_RUNTIME_STORES is not set")
    else:
        mount, vol = volume_at(overlay)
        if vol is None or "persistentVolumeClaim" not in vol or mount.get("readOnly"):
            problem(f"SEREN_SCC_RUNTIME_STORES {overlay} is not on a writable PVC mount")
    return config, token


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "extract"):
        sys.exit(__doc__)
    directory = sys.argv[2]
    docs = load(directory)
    resolved = resolve(docs)
    if problems:
        for p in problems:
            print(f"{directory}: {p}")
        sys.exit(1)
    if sys.argv[1] == "extract":
        config, token = resolved
        out = sys.argv[3]
        with open(os.path.join(out, "config.yaml"), "w") as f:
            f.write(config)
        with open(os.path.join(out, "token"), "w") as f:
            f.write(token)
    print(f"{directory}: {len(docs)} resources, every name resolves")


if __name__ == "__main__":
    main()
