// The embed code for the picked views, copied to the clipboard.
// (A CustomJS callback: views, all_views, sizes, title, code.)
const url = new URL(window.location.href.split('#')[0]);
// views: the Bokeh CheckboxGroup, whose labels follow all_views
const picked = views.active.length ? views.active.map((i) => all_views[i]) : all_views;
url.searchParams.set('views', picked.join(','));
url.searchParams.delete('section');  // the embed layout shows its views, whatever the section
const height = sizes.base + sizes.per_view * picked.length;
code.value = `<iframe src="${url.href}" title="${title}" width="100%" height="${height}" `
  + 'style="border:0; max-width:100%" loading="lazy"></iframe>';
try { navigator.clipboard.writeText(code.value).catch(() => {}); } catch (error) {}
