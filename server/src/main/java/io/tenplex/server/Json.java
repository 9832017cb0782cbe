package io.tenplex.server;

import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** JSON shapes of the API's answers. */
final class Json {
    private Json() {
    }

    static Map<String, Object> entry(Entry e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", e.path().toString());
        m.put("name", e.name());
        m.put("type", e.type().jsonName());
        if (e.type() == EntryType.DIR) {
            m.put("children", e.children());
        } else {
            m.put("size", e.size());
        }
        if (e.meta() != null) {
            m.put("dtype", e.meta().dtype().wireName());
            m.put("shape", e.meta().shape().dims());
        }
        return m;
    }

    static Map<String, Object> listing(String path, List<Entry> entries) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("entries", entries.stream().map(Json::entry).toList());
        return m;
    }
}
