// The page's modules, run in this order once the document is parsed. app/client.js is loaded
// on its own, first (index.html), so the core's worker starts before these arrive; build.py
// bundles this graph into one file (all but client.js), so its two dozen modules do not hold
// the browser's few connections while the worker asks for Pyodide.
import "./main.js";
import "./checkpoints.js";
