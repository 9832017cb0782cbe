package io.tenplex.store.rest;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.TensorStore;
import java.util.concurrent.ExecutorService;

/** What endpoints share: the store, the JSON mapper, the executor for long work, metrics, the token. */
record RestContext(TensorStore store, ObjectMapper json, ExecutorService work, RestMetrics metrics, byte[] token) {
}
