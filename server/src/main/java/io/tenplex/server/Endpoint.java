package io.tenplex.server;

import io.tenplex.store.StorePath;

/** Makes the call that answers one request of a route, from its head. */
@FunctionalInterface
interface Endpoint {
    /**
     * @param target the store path after a store route's resource ({@code /} when none), or null for
     *     other routes
     */
    Call call(Exchange ex, StorePath target) throws Exception;
}
