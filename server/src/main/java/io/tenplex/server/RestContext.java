package io.tenplex.server;

import java.util.concurrent.atomic.AtomicLong;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.TensorStore;
import java.util.concurrent.ExecutorService;

/**
 * What endpoints share: the store, the JSON mapper, the executor for long work, metrics, the token,
 * the limits, and the bytes of control bodies being collected now (over all connections).
 */
record RestContext(TensorStore store, ObjectMapper json, ExecutorService work, RestMetrics metrics, byte[] token,
        ServerLimits limits, AtomicLong controlBytes) {
}
