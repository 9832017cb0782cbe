package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;

/** An informer handler that runs one action on every added, updated or deleted pod. */
final class OnAnyChange implements ResourceEventHandler<Pod> {
    private final Runnable action;

    OnAnyChange(Runnable action) {
        this.action = action;
    }

    @Override
    public void onAdd(Pod pod) {
        action.run();
    }

    @Override
    public void onUpdate(Pod before, Pod after) {
        action.run();
    }

    @Override
    public void onDelete(Pod pod, boolean unknownFinalState) {
        action.run();
    }
}
