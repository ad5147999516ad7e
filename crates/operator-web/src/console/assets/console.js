// hooks-mcp operator console: live updates.
//
// The page's live region (#live) re-reads itself through htmx on a `refresh` event. This
// script listens to the daemon's event stream (the URL in #live's data-events) and fires
// `refresh` on every `change` event. The browser's EventSource reconnects by itself after a
// dropped connection; the stream's URL carries the store version the page was read at, so a
// change made meanwhile is reported at once.
//
// The stream is closed when the page is left: a browser opens at most six connections to one
// host, and pages it keeps for the back button would otherwise hold theirs. A page restored
// from that cache is read again.
(function () {
  'use strict';
  var source = null;

  function connect() {
    var live = document.getElementById('live');
    if (!live || !live.dataset.events || source) {
      return;
    }
    source = new EventSource(live.dataset.events);
    source.addEventListener('change', function () {
      if (window.htmx) {
        window.htmx.trigger(live, 'refresh');
      }
    });
  }

  window.addEventListener('pagehide', function () {
    if (source) {
      source.close();
      source = null;
    }
  });
  window.addEventListener('pageshow', function (event) {
    if (event.persisted) {
      window.location.reload();
    }
  });
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', connect);
  } else {
    connect();
  }
})();
