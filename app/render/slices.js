// Work spread over frames, so that no main-thread task of it is long: each slice runs just
// after a frame has been painted, and so is laid out and painted in a frame of its own
// (several slices run within one frame would be laid out together, in one long frame).

// A slice waits at most this long for a frame: a hidden tab paints none, and its work must
// still get done (its timers are throttled instead).
const FRAME_WAIT_MS = 100;

/** Calls `fn` once, in a task of its own after the next frame (or after FRAME_WAIT_MS without one). */
export function afterFrame(fn) {
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    fn();
  };
  requestAnimationFrame(() => setTimeout(once, 0));
  setTimeout(once, FRAME_WAIT_MS);
}

/**
 * Runs `work(part)` for each part of `items` cut in `size`-long parts, one part after each
 * frame, while `current()` holds (a newer rendering of the same place stops an older one);
 * `done()` after the last part.
 */
export function inSlices(items, size, work, { current = () => true, done = () => {} } = {}) {
  const step = (from) => {
    if (!current()) return;
    if (from >= items.length) {
      done();
      return;
    }
    work(items.slice(from, from + size));
    afterFrame(() => step(from + size));
  };
  afterFrame(() => step(0));
}
