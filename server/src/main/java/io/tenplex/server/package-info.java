/**
 * The REST edge owns HTTP: the Netty server, routing, the prototype's compatibility routes
 * ({@code /upload}, {@code /query}, {@code /delete}), the versioned {@code /api/v1} API, streaming of
 * bodies in both directions, the mapping of errors to status codes, authentication and metrics.
 */
package io.tenplex.server;
