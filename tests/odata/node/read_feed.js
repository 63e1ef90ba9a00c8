// Reads every page of one OData feed with @odata/client (a client no one here wrote) and
// prints {names, pages, count} as JSON. Usage: node read_feed.js BASE USER SECRET VIEW
"use strict";
const { OData } = require("@odata/client");

async function main() {
  const [base, username, secret, view] = process.argv.slice(2);
  const client = OData.New4({ serviceEndpoint: `${base}/odata/`,
                              credential: { username, password: secret } });
  const names = [];
  let pages = 0;
  let count;
  let skiptoken = null;
  for (;;) {
    const options = OData.newOptions()
      .filter("startswith(name,'Batch')")
      .select(["id", "name"])
      .orderby("name", "desc")
      .count(true);
    if (skiptoken !== null) options.custom("$skiptoken", skiptoken);
    const page = await client.newRequest({ collection: view, params: options });
    if (page.error) throw new Error(JSON.stringify(page.error));
    pages += 1;
    count = page["@odata.count"];
    names.push(...page.value.map((row) => row.name));
    const next = page["@odata.nextLink"];
    if (!next) break;
    skiptoken = new URL(next).searchParams.get("$skiptoken");
  }
  process.stdout.write(JSON.stringify({ names, pages, count }));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
