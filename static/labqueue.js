// LabQueue's own script (the Content Security Policy allows no inline script): a <select data-autosubmit>
// submits its form as soon as it changes, e.g. the course filter of "My jobs".
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.hasAttribute("data-autosubmit") && select.form) {
    select.form.requestSubmit();
  }
});

// The job page's live part (templates/jobs/_job_live.html). Its poll asks whether the job changed since what
// the page shows (If-None-Match with the ETag the page or the last answer gave: 304 when not). A changed job's
// answer carries every part with a digest of its content (data-v); a part whose digest is the one on the page
// is left alone, so the Cancel button keeps keyboard focus and an opened History stays open.
document.addEventListener("htmx:configRequest", (event) => {
  const etag = event.target instanceof HTMLElement ? event.target.dataset.etag : "";
  if (etag) {
    event.detail.headers["If-None-Match"] = etag;
  }
});
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const current = event.detail.target;
  const incoming = event.detail.fragment.firstElementChild;
  if (current.dataset.v && incoming && incoming.dataset.v === current.dataset.v) {
    event.detail.shouldSwap = false;
  }
});
