package io.tenplex.ptc;

/** A GPU: its worker (host) and its index on that worker. */
public record Device(int worker, int local) implements Comparable<Device> {
    public Device {
        if (worker < 0 || local < 0) {
            throw new IllegalArgumentException("device w" + worker + ":d" + local + " has a negative index");
        }
    }

    @Override
    public int compareTo(Device o) {
        return worker != o.worker ? Integer.compare(worker, o.worker) : Integer.compare(local, o.local);
    }

    @Override
    public String toString() {
        return "w" + worker + ":d" + local;
    }
}
