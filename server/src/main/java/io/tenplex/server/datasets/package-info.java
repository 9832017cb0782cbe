/**
 * The dataset routes of the REST edge under {@code /api/v1/datasets/<job>}: the JSON of mount
 * requests and answers, and the daemon-to-daemon samples protocol (both its server side and the
 * HTTP client a mount's loader uses to ask peers).
 */
package io.tenplex.server.datasets;
