//! A name as the control plane takes it: at most [`MAX_NAME`] bytes, never blank. The converter fits the names
//! of each sample (node, model, namespace, pod, deployment) and the vLLM events their deployment and model.

/// The control plane's limit on a name (`eai_engine::wire::MAX_NAME`).
pub(crate) const MAX_NAME: usize = eai_engine::wire::MAX_NAME;

/// A name as the control plane takes it: `blank` for a blank one, one longer than [`MAX_NAME`] bytes cut at the
/// last character that fits (bytes: the strictest of the control plane's rules, which count characters for a
/// sample's names and bytes for a usage event's model name).
pub(crate) fn fit_name<'a>(s: &'a str, blank: &'a str) -> std::borrow::Cow<'a, str> {
    if s.trim().is_empty() {
        return std::borrow::Cow::Borrowed(blank);
    }
    if s.len() <= MAX_NAME {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = MAX_NAME;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Borrowed(&s[..end])
}
