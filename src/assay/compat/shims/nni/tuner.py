"""NNI's ``Tuner`` base class, run as an assay custom searcher.

A custom tuner of an NNI config (``tuner: {className, codeDirectory}``) subclasses this class
and implements NNI's interface: ``update_search_space(search_space)``,
``generate_parameters(parameter_id, **kwargs)`` and ``receive_trial_result(parameter_id,
parameters, value, **kwargs)``. assay runs the subclass as the experiment's custom searcher: this
class implements assay's searcher protocol on top of those three methods. It keeps
``trialConcurrency`` trials running (the searcher's ``max_concurrent_trials``; one when not
given), each to its final result, until ``maxTrialNumber`` trials (``max_trials``) have been
created or ``generate_parameters`` raises :class:`NoMoreTrialError`; the experiment ends when the
last running trial does. The config's ``classArgs`` are the subclass's constructor arguments.
The search space is given in NNI's format (``{"name": {"_type": ..., "_value": [...]}}``);
``value`` is the trial's final result as it reported it (NNI's ``default`` number).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NoMoreTrialError", "Tuner"]


class NoMoreTrialError(Exception):
    """Raised by ``generate_parameters`` when the tuner has nothing more to try."""


class Tuner:
    """Base class of NNI tuners; subclasses override the three NNI methods."""

    def update_search_space(self, search_space: dict[str, Any]) -> None:
        """Called once, before any parameters are generated."""

    def generate_parameters(self, parameter_id: int, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("a tuner must implement generate_parameters")

    def receive_trial_result(
        self, parameter_id: int, parameters: dict[str, Any], value: Any, **kwargs: Any
    ) -> None:
        """The final result of the trial given ``parameters``."""

    def trial_end(self, parameter_id: int, success: bool, **kwargs: Any) -> None:
        """Called when a trial ends, whether or not it reported a result."""

    # -- assay's custom searcher protocol ---------------------------------------------------------

    def _assay_state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.__dict__.setdefault(
            "_assay",
            {"next_id": 0, "trials": {}, "results": [], "space": None, "exhausted": False},
        )
        return state

    def _assay_next(self, ctx: Any) -> list[Any]:
        """New trials up to the concurrency, within the trial budget; the shutdown once none
        runs and no more may start."""
        state = self._assay_state()
        settings = getattr(ctx, "settings", {}) or {}
        budget = settings.get("max_trials")
        at_once = max(1, int(settings.get("max_concurrent_trials") or 1))
        ops: list[Any] = []
        while (
            not state.get("exhausted")
            and len(state["trials"]) < at_once
            and (budget is None or state["next_id"] < budget)
        ):
            parameter_id = state["next_id"]
            try:
                params = self.generate_parameters(parameter_id)
            except Exception as exc:
                if type(exc).__name__ != "NoMoreTrialError":
                    raise
                state["exhausted"] = True
                break
            state["next_id"] = parameter_id + 1
            op = ctx.create_trial(dict(params))
            state["trials"][op.request_id] = [parameter_id, dict(params)]
            # One operation long: a trial's final result completes it.
            ops += [op, ctx.validate_after(op.request_id, 1)]
        if not state["trials"]:
            ops.append(ctx.shutdown())
        return ops

    def initial_operations(self, ctx: Any) -> list[Any]:
        space = nni_search_space(ctx.hyperparameters)
        self._assay_state()["space"] = space
        self.update_search_space(space)
        return self._assay_next(ctx)

    def on_validation_completed(
        self, ctx: Any, request_id: str, metric: float, length: int
    ) -> list[Any]:
        state = self._assay_state()
        parameter_id, params = state["trials"][request_id]
        # assay gives every searcher "smaller is better"; NNI's tuners get the number reported.
        value = metric if ctx.smaller_is_better else -metric
        state["results"].append([parameter_id, params, value])
        self.receive_trial_result(parameter_id, params, value)
        return [ctx.close(request_id)]

    def on_trial_closed(self, ctx: Any, request_id: str) -> list[Any]:
        parameter_id, _ = self._assay_state()["trials"].pop(request_id)
        self.trial_end(parameter_id, True)
        return self._assay_next(ctx)

    def on_trial_exited_early(self, ctx: Any, request_id: str, reason: str) -> list[Any]:
        parameter_id, _ = self._assay_state()["trials"].pop(request_id)
        self.trial_end(parameter_id, False)
        return self._assay_next(ctx)

    def save_state(self) -> dict[str, Any]:
        return self._assay_state()

    def load_state(self, state: dict[str, Any]) -> None:
        # After a master restart the tuner is built afresh: it is given the search space and
        # every result it had received again, in order, as NNI's resumed experiments do.
        self.__dict__["_assay"] = state
        if state.get("space") is not None:
            self.update_search_space(state["space"])
        for parameter_id, params, value in state.get("results", []):
            self.receive_trial_result(parameter_id, params, value)


def nni_search_space(hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """An assay ``hyperparameters`` section (as JSON) in NNI's search space format."""
    return {name: _nni(hp) for name, hp in hyperparameters.items()}


def _nni(hp: Any) -> Any:
    if not isinstance(hp, dict):
        return {"_type": "choice", "_value": [hp]}
    kind = hp.get("type")
    q = hp.get("q")
    if kind == "const":
        return {"_type": "choice", "_value": [hp.get("val")]}
    if kind == "int":
        return {"_type": "randint", "_value": [hp["minval"], hp["maxval"] + 1]}
    if kind == "double":
        if q:
            return {"_type": "quniform", "_value": [hp["minval"], hp["maxval"], q]}
        return {"_type": "uniform", "_value": [hp["minval"], hp["maxval"]]}
    if kind == "log":
        base = float(hp.get("base", 10.0))
        bounds = [base ** hp["minval"], base ** hp["maxval"]]
        if q:
            return {"_type": "qloguniform", "_value": [*bounds, q]}
        return {"_type": "loguniform", "_value": bounds}
    if kind in ("normal", "lognormal"):
        name = ("q" if q else "") + kind
        return {"_type": name, "_value": [hp["mu"], hp["sigma"], *([q] if q else [])]}
    if kind == "categorical":
        return {"_type": "choice", "_value": list(hp["vals"])}
    if kind == "choice":
        options = []
        for option in hp.get("options", []):
            if isinstance(option, dict):
                options.append({k: _option_value(v) for k, v in option.items()})
            else:
                options.append(option)
        return {"_type": "choice", "_value": options}
    return {name: _nni(inner) for name, inner in hp.items()}


def _option_value(hp: Any) -> Any:
    if isinstance(hp, dict) and hp.get("type") == "const":
        return hp.get("val")
    return _nni(hp)
