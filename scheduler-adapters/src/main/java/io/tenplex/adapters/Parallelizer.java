package io.tenplex.adapters;

import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;

/**
 * Chooses a job's parallel configuration (T, P, D) for a number of devices: step 3 of a
 * reconfiguration. Two implementations: {@link ParaConfigTable} (the prototype's para-config JSON)
 * and {@link BuiltinChooser} (a small cost model over the job's model). Implementations are pure and
 * answer {@link IllegalArgumentException} with the reason when no configuration fits.
 */
public interface Parallelizer {
    /**
     * What a choice may depend on.
     *
     * @param devices          the job's devices after the change
     * @param devicesPerWorker devices on each worker (tensor parallelism stays within a worker)
     * @param model            the job's model (may be null for a table)
     * @param memoryPerDevice  bytes of model and optimizer state a device may hold (0: no limit)
     */
    record Request(int devices, int devicesPerWorker, Model model, long memoryPerDevice) {
        public Request {
            if (devices < 1) {
                throw new IllegalArgumentException("a job needs at least one device, got " + devices);
            }
            if (devicesPerWorker < 1) {
                throw new IllegalArgumentException("devices per worker must be >= 1, got " + devicesPerWorker);
            }
        }
    }

    ParallelConfig choose(Request request);

    /** A short name for reports ({@code table}, {@code builtin}). */
    String name();
}
