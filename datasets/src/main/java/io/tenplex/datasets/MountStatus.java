package io.tenplex.datasets;

/** A job's mount on this daemon and its loading. */
public record MountStatus(MountInfo mount, LoadStatus load) {
}
