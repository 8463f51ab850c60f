"""Custom searchers for the tests: one that works, one whose code fails."""


class TwoTrials:
    """Two trials trained to 20 batches each, then done."""

    def __init__(self):
        self.closed = 0

    def initial_operations(self, ctx):
        return [ctx.create_trial(ctx.sample()) for _ in range(2)]

    def on_trial_created(self, ctx, request_id):
        return [ctx.validate_after(request_id, 20)]

    def on_validation_completed(self, ctx, request_id, metric, length):
        return [ctx.close(request_id)]

    def on_trial_closed(self, ctx, request_id):
        self.closed += 1
        return [ctx.shutdown()] if self.closed == 2 else []

    def on_trial_exited_early(self, ctx, request_id, reason):
        return self.on_trial_closed(ctx, request_id)

    def save_state(self):
        return {"closed": self.closed}

    def load_state(self, state):
        self.closed = state["closed"]


class Broken:
    def initial_operations(self, ctx):
        raise ValueError("this searcher is broken on purpose")
