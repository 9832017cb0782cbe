"""The signed reasons the live pod launchers leave in the job's store (:mod:`tenplex.launchers.pod_live`): a
counter (``tenplex/live/<n>/failed``, ``tenplex/pods/<tag>/abort``) raised with its reason at
``<counter>/why``, sealed with the store's secret (:mod:`tenplex.live_auth`). Anyone who reaches the store
can raise a counter; a launcher acts only on a reason that verifies."""

from .. import live_auth
from .assignment import log


def report(store, secret, job, counter, why):
    """Raises ``counter`` with the reason ``why``: the first signed reason stays, an unsigned one there is
    replaced."""
    k = counter + "/why"
    value = live_auth.seal(secret, job, k, why)
    if live_auth.unseal(secret, job, k, store.compare_set(k, "", value)) is None:  # answers the value it holds
        store.set(k, value)
    store.add(counter, 1)


def reported(store, secret, job, counter, ignored):
    """The signed reason once ``counter`` was raised, else None (an unsigned one is ignored, and logged once:
    ``ignored`` holds the keys already logged)."""
    k = counter + "/why"
    if store.add(counter, 0) == 0:
        return None
    held = store.compare_set(k, "", "")  # the value held, without waiting for one ("" when none yet)
    if not held:
        return None
    why = live_auth.unseal(secret, job, k, held)
    if why is None:
        ignore(k, ignored)
    return why


def ignore(key, ignored, more=""):
    if key not in ignored:
        ignored.add(key)
        log("ignoring %s: its value is not signed by this job's launchers%s" % (key, more))
