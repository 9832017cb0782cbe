/** The job lifecycle: saves and checkpoint generations, the reconfiguration coordinator and its parts, stop flags. */
package io.tenplex.jobs;
