--
-- plan_lines.sql: plan helpers the suites that move rows share, created in
-- the suite's own schema (include it after SET search_path):
-- plan_lines(query, options) the lines of EXPLAIN (options) query, trimmed;
-- rows_moved(query) what EXPLAIN ANALYZE says the plan moved (NULL: no move).
--
CREATE FUNCTION plan_lines(query text, options text DEFAULT 'COSTS OFF') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (%s) %s', options, query) LOOP
		RETURN NEXT trim(line);
	END LOOP;
END
$$;
CREATE FUNCTION rows_moved(query text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT substring(l from '^Actual Rows Moved: (\d+)')::bigint
	FROM plan_lines(query, 'ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF') l
	WHERE l ~ '^Actual Rows Moved: ' LIMIT 1
$$;
