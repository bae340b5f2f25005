// What an embed tells the course page around it: its state and its content's height,
// in the three ways course pages listen for. sitebuild.runtime.add_status puts
// this before the status bar (static/status.html), which tells its state through it.
//
// - Its own message, to any page: {type: 'attention-scaling-lab', state ('loading',
//   'ready' or 'failed'), python ('shared' or 'own'), height (px), href}, posted
//   whenever one of them changes. A plain course page fits its frames in three lines
//   (README, "Embed").
// - Canvas's {subject: 'lti.frameResize', height}, as a JSON string, as Canvas's LTI
//   documentation writes it.
// - H5P's resizer handshake (Moodle, WordPress and Drupal ship the parent's side):
//   the embed says {context: 'h5p', action: 'hello'}; once the parent answers hello,
//   each new height goes as prepareResize {scrollHeight, clientHeight}, and on the
//   parent's resizePrepared as resize {scrollHeight}.
//
// The height is the content's, not the frame's: the bottom of the page's laid-out
// elements (the status bar, fixed at the bottom, counted while it shows), so that it
// shrinks as well as grows; told once the embed is live (until then it shows the
// prerendered page, the whole lab, under a placeholder: the snippet's height holds).
// Outgoing messages carry nothing private (the page's own link); incoming ones are
// heard only from the parent window.
const labHost = (() => {
  const framed = window.parent !== window;
  const told = {type: 'attention-scaling-lab', state: 'loading', python: null, height: null};
  const post = (message) => framed && window.parent.postMessage(message, '*');
  let h5p = false;  // whether the parent speaks H5P's resizer protocol
  const tell = (fields) => {
    const live = told.state === 'loading' && fields.state && fields.state !== 'loading';
    Object.assign(told, fields, {href: location.href});
    post({...told});
    if (live) measureSoon();
  };

  // The content's height: the lowest bottom of the body's laid-out children but fixed
  // ones, plus the status bar while it shows.
  const contentHeight = () => {
    const body = document.body;
    let bottom = 0;
    for (const child of body.children) {
      const {position} = getComputedStyle(child);
      if (position === 'fixed' || position === 'absolute') continue;
      bottom = Math.max(bottom, child.getBoundingClientRect().bottom);
    }
    const bar = document.getElementById('lab-status');
    const barHeight = bar && !bar.hidden ? bar.offsetHeight : 0;
    const margin = parseFloat(getComputedStyle(body).marginBottom) || 0;
    return Math.ceil(bottom + window.scrollY + margin + barHeight);
  };
  const sendHeight = () => {
    if (told.state === 'loading') return;
    const height = contentHeight();
    if (height === told.height) return;
    tell({height});
    post(JSON.stringify({subject: 'lti.frameResize', height}));
    if (h5p) post({context: 'h5p', action: 'prepareResize', scrollHeight: height, clientHeight: height});
  };
  // At most one measure per HEIGHT_DEBOUNCE ms, by time (an embed off the screen draws
  // no frames): a plot redrawn in steps moves the course page once.
  const HEIGHT_DEBOUNCE = 100;
  let pending = null;
  const measureSoon = () => {
    if (pending === null) pending = setTimeout(() => { pending = null; sendHeight(); }, HEIGHT_DEBOUNCE);
  };

  if (framed) {
    addEventListener('message', (event) => {
      if (event.source !== window.parent || event.data?.context !== 'h5p') return;
      if (event.data.action === 'hello') {
        h5p = true;
        told.height = null;  // tell it the height, now that it listens
        measureSoon();
      } else if (event.data.action === 'resizePrepared') {
        post({context: 'h5p', action: 'resize', scrollHeight: contentHeight()});
      } else if (event.data.action === 'resize') {
        measureSoon();  // the parent's window changed size
      }
    });
    post({context: 'h5p', action: 'hello'});
    // A resize is reported in a frame drawn; an embed off the screen draws none, so a
    // change of the page (the status bar hidden, a pane shown) is watched too.
    const start = () => {
      const sized = new ResizeObserver(measureSoon);
      sized.observe(document.body);
      for (const child of document.body.children) sized.observe(child);
      new MutationObserver(measureSoon).observe(document.body, {
        childList: true, subtree: true, attributes: true, attributeFilter: ['hidden', 'style', 'class'],
      });
      addEventListener('resize', measureSoon);
      measureSoon();
    };
    if (document.readyState === 'loading') addEventListener('DOMContentLoaded', start);
    else start();
  }
  return {tell};
})();
