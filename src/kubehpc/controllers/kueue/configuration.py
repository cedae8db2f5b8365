"""Kueue's own ``Configuration`` (``config.kueue.x-k8s.io``): the scheduler-wide choices.

Kueue reads it from ``controller_manager_config.yaml``, which its install ships in the
ConfigMap ``kueue-manager-config``. A file given to ``kubehpc up --kueue-config`` or
``kubehpc sim --queues`` may be either: the Configuration itself, or that ConfigMap.

Of its keys, ``fairSharing`` (``enable``, ``preemptionStrategies``) changes how workloads are
admitted and is honoured. The keys that say how Kueue's manager process runs (its webhook,
metrics and health endpoints, leader election, client rate limits, ...) have nothing to act
on here and are accepted as such. Any other key is refused by name, so that a setting kubehpc
does not carry out (``waitForPodsReady``, ``admissionFairSharing``, ``multiKueue``, ...) is
never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kubehpc.sched.admission import AdmissionConfig, FairSharingStrategy

CONFIG_GROUP = "config.kueue.x-k8s.io/"
CONFIGURATION = "Configuration"
CONFIGMAP_KEY = "controller_manager_config.yaml"
# Keys of the Configuration that say how the manager runs, not how it admits.
KEYS_WITHOUT_EFFECT = frozenset(
    {
        "apiVersion",
        "kind",
        "metadata",
        "namespace",
        "internalCertManagement",
        "clientConnection",
        "controller",
        "health",
        "metrics",
        "webhook",
        "leaderElection",
        "pprofBindAddress",
        "integrations",
        "queueVisibility",
    }
)


class ConfigurationError(ValueError):
    """A Kueue Configuration kubehpc cannot run as written; the message names the field."""


def is_configuration(doc: object) -> bool:
    return (
        isinstance(doc, Mapping)
        and doc.get("kind") == CONFIGURATION
        and str(doc.get("apiVersion", "")).startswith(CONFIG_GROUP)
    )


UNSUPPORTED = (
    "is not supported (of Kueue's Configuration kubehpc carries out fairSharing; the manager's own "
    "settings are accepted and have no effect)"
)


def check_configuration(
    doc: Mapping[str, Any],
    where: str,
    without_effect: frozenset[str] = KEYS_WITHOUT_EFFECT,
    unsupported: str = UNSUPPORTED,
) -> None:
    """Raise :class:`ConfigurationError` (``where: field: problem``) unless every key of ``doc``
    is honoured (``fairSharing``) or in ``without_effect``; ``unsupported`` says why not."""
    for key in doc:
        if key != "fairSharing" and key not in without_effect:
            raise ConfigurationError(f"{where}: {key} {unsupported}")
    fair = doc.get("fairSharing")
    if fair is None:
        return
    if not isinstance(fair, Mapping):
        raise ConfigurationError(f"{where}: fairSharing: must be a mapping")
    for key in fair:
        if key not in ("enable", "preemptionStrategies"):
            raise ConfigurationError(f"{where}: fairSharing.{key}: unknown field")
    if not isinstance(fair.get("enable", False), bool):
        raise ConfigurationError(f"{where}: fairSharing.enable: must be true or false")
    strategies = fair.get("preemptionStrategies", [])
    allowed = [str(x) for x in FairSharingStrategy]
    if not isinstance(strategies, list) or any(x not in allowed for x in strategies):
        raise ConfigurationError(
            f"{where}: fairSharing.preemptionStrategies: each must be one of {', '.join(allowed)}"
        )


def admission_config(doc: Mapping[str, Any] | None, **choices: Any) -> AdmissionConfig:
    """The admission core's config for a checked Configuration (None: Kueue's defaults):
    fair sharing when it enables it, with its preemption strategies or Kueue's default pair
    when it names none. ``choices`` are kubehpc's own (e.g. ``backfill``)."""
    fair = (doc or {}).get("fairSharing") or {}
    if not fair.get("enable"):
        return AdmissionConfig(**choices)
    strategies = tuple(FairSharingStrategy(x) for x in fair.get("preemptionStrategies") or ())
    if strategies:
        return AdmissionConfig(fair_sharing=True, fair_sharing_strategies=strategies, **choices)
    return AdmissionConfig(fair_sharing=True, **choices)


def read_configuration(path: str | Path) -> dict[str, Any]:
    """The Configuration in ``path`` (itself, or inside Kueue's ``kueue-manager-config``
    ConfigMap), checked; errors name the file and field."""
    p = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
    except OSError as exc:
        raise ConfigurationError(f"{p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{p}: not YAML: {exc}") from None
    found: list[tuple[str, dict[str, Any]]] = []
    for i, doc in enumerate(docs, 1):
        where = f"{p}: document {i}"
        if is_configuration(doc):
            found.append((where, dict(doc)))
        elif (
            isinstance(doc, Mapping)
            and doc.get("kind") == "ConfigMap"
            and CONFIGMAP_KEY in (doc.get("data") or {})
        ):
            where = f"{where} (ConfigMap data.{CONFIGMAP_KEY})"
            try:
                inner = yaml.safe_load(doc["data"][CONFIGMAP_KEY])
            except yaml.YAMLError as exc:
                raise ConfigurationError(f"{where}: not YAML: {exc}") from None
            if not is_configuration(inner):
                raise ConfigurationError(f"{where}: not a {CONFIG_GROUP}… {CONFIGURATION}")
            found.append((where, dict(inner)))
        else:
            kind = doc.get("kind") if isinstance(doc, Mapping) else type(doc).__name__
            raise ConfigurationError(
                f"{where}: kind {kind!r} is neither Kueue's {CONFIGURATION} ({CONFIG_GROUP}…) nor a "
                f"ConfigMap holding {CONFIGMAP_KEY}"
            )
    if len(found) != 1:
        raise ConfigurationError(f"{p}: want one Kueue {CONFIGURATION}, found {len(found)}")
    where, doc = found[0]
    check_configuration(doc, where)
    return doc
