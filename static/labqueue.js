// LabQueue's own script (the Content Security Policy allows no inline script): a <select data-autosubmit>
// submits its form as soon as it changes, e.g. the course filter of "My jobs".
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.hasAttribute("data-autosubmit") && select.form) {
    select.form.requestSubmit();
  }
});
